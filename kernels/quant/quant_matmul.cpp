// quant_matmul on the CPU kernel path: the activations quantized once per
// call (a task per row, on the pool), then the SIMD kernels of
// quant_gemm_kernels.hpp over blocks of output columns, on the pool; a
// group's products share both jobs. Every output's order is fixed by
// quant_matmul.hpp, so neither the split nor the group changes a bit.
#include "kernels/quant/quant_matmul.hpp"

#include <algorithm>
#include <span>
#include <vector>

#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/quant/dequantize.hpp"
#include "kernels/quant/quant_gemm_kernels.hpp"
#include "kernels/quant/quant_gemm_q5.hpp"
#include "kernels/quant/quantize.hpp"

namespace hive {

namespace {

enum class QuantKernel { scalar, avx2, avx512_vnni };

QuantKernel quant_kernel() {
#if defined(__x86_64__)
  const cpu::CpuPath path = cpu::cpu_kernel_path();
  if (path >= cpu::CpuPath::avx512 && cpu::cpu_has_avx512_vnni()) return QuantKernel::avx512_vnni;
  if (path >= cpu::CpuPath::avx2) return QuantKernel::avx2;
#endif
  return QuantKernel::scalar;
}

// Output columns per task: 4096 columns make 256 tasks, enough for the
// pool's guided split to finish its threads together.
constexpr int64_t kColumnsPerTask = 16;
// Rows per task: their activations (k + k / 8 bytes each) stay in L2 beside
// the task's weights, and each row block reads the weights once more.
constexpr int64_t kRowsPerTask = 64;
// What quantizing an activation costs against a multiply-add, for the
// pool's threshold.
constexpr int64_t kQuantizeCost = 8;

bool k_quant(GgmlType type) {
  return type == GgmlType::q4_k || type == GgmlType::q5_k || type == GgmlType::q6_k;
}

// The activations of one product of a group, kept between calls.
struct Activations {
  std::vector<int8_t> qs;
  std::vector<float> d;
  std::vector<int32_t> offset;
  std::vector<BlockQ8_K> k_blocks;
};

// The kernels' view of p, with buffers for x's quantized rows in `staged`
// (filled by quantize_group), or those of `same_x`, an earlier product of
// the group with the same x and the same activation blocks.
QuantGemmArgs prepare(const QuantMatmul& p, Activations& staged, const QuantGemmArgs* same_x) {
  QuantGemmArgs a;
  a.type = p.type;
  a.w = static_cast<const char*>(p.w);
  a.w_row_bytes = p.k / ggml_type_info(p.type).block_size * ggml_type_info(p.type).block_bytes;
  a.m = p.m;
  a.k = p.k;
  a.n = p.n;
  a.out = p.out;
  if (same_x) {
    a.x_k = same_x->x_k;
    a.x_qs = same_x->x_qs;
    a.x_d = same_x->x_d;
    a.x_offset = same_x->x_offset;
    a.x_blocks = same_x->x_blocks;
  } else if (k_quant(p.type)) {
    staged.k_blocks.resize(static_cast<size_t>(p.m * p.k / kQKK));
    a.x_k = staged.k_blocks.data();
  } else {
    a.x_blocks = p.k / kQK;
    staged.qs.resize(static_cast<size_t>(p.m * a.x_blocks * kQK));
    staged.d.resize(static_cast<size_t>(p.m * a.x_blocks));
    staged.offset.resize(static_cast<size_t>(p.m * a.x_blocks));
    a.x_qs = staged.qs.data();
    a.x_d = staged.d.data();
    a.x_offset = staged.offset.data();
  }
  return a;
}

// Row i of x quantized into `staged`, laid out as prepare() described it in a.
void quantize_row(const float* x, const QuantGemmArgs& a, int64_t i, Activations& staged,
                  std::vector<BlockQ8_0>& blocks) {
  const float* row = x + i * a.k;
  if (a.x_k) return quantize_row_q8_k(row, a.k, staged.k_blocks.data() + i * a.k / kQKK);
  blocks.resize(static_cast<size_t>(a.k / kQK));
  quantize_row_q8_0(row, a.k, blocks.data());
  for (size_t b = 0; b < blocks.size(); ++b) {
    const int64_t at = i * a.x_blocks + static_cast<int64_t>(b);
    std::copy_n(blocks[b].qs, kQK, staged.qs.data() + at * kQK);
    staged.d[static_cast<size_t>(at)] = half_bits_to_f32(blocks[b].d);
    int32_t sum = 0;
    for (const int8_t q : blocks[b].qs) sum += q;
    staged.offset[static_cast<size_t>(at)] = -128 * sum;
  }
}

// A thread's scratch for the kernels.
struct ScratchBuffers {
  std::vector<UnpackedQ8_0> q8;
  std::vector<LaneBlockQ8_0> q8_lanes;
  std::vector<UnpackedK> blocks;
  std::vector<ColumnBlockK> k_columns;
  QuantScratch view() { return {q8.data(), q8_lanes.data(), blocks.data(), k_columns.data()}; }
};

// Enough for every product of a group that unpacks its weights.
ScratchBuffers make_scratch(std::span<const QuantGemmArgs> group) {
  ScratchBuffers s;
  for (const QuantGemmArgs& a : group) {
    // Decode on AVX-512 reads the weights straight into registers.
    if (a.m <= 1 && quant_kernel() == QuantKernel::avx512_vnni) continue;
    if (a.x_k && quant_kernel() == QuantKernel::avx512_vnni) {
      s.k_columns.resize(std::max(s.k_columns.size(), static_cast<size_t>(a.k / kQKK)));
    } else if (a.x_k) {
      s.blocks.resize(std::max(s.blocks.size(), static_cast<size_t>(kTileColumns * a.k / kQKK)));
    } else {
      const auto q8_blocks = static_cast<size_t>(a.x_blocks);
      if (quant_kernel() == QuantKernel::avx512_vnni) {
        s.q8_lanes.resize(std::max(s.q8_lanes.size(), q8_blocks));
      } else {
        s.q8.resize(std::max(s.q8.size(), q8_blocks));
      }
    }
  }
  return s;
}

// Task t: row block t / column_tasks, column block t % column_tasks.
void run_task(const QuantGemmArgs& all, QuantKernel kernel, int64_t task, int64_t column_tasks,
              ScratchBuffers& scratch) {
  const int64_t begin = task % column_tasks * kColumnsPerTask;
  const int64_t end = std::min(all.n, begin + kColumnsPerTask);
  const int64_t first_row = task / column_tasks * kRowsPerTask;
  QuantGemmArgs a = all;
  a.m = std::min(kRowsPerTask, all.m - first_row);
  a.out += first_row * all.n;
  if (a.x_k) a.x_k += first_row * (all.k / kQKK);
  if (a.x_qs) {
    a.x_qs += first_row * all.x_blocks * kQK;
    a.x_d += first_row * all.x_blocks;
    a.x_offset += first_row * all.x_blocks;
  }
#if defined(__x86_64__)
  if (kernel == QuantKernel::avx512_vnni)
    return quant_gemm_columns_avx512_vnni(a, begin, end, scratch.view());
  quant_gemm_columns_avx2(a, begin, end, scratch.view());
#else
  (void)kernel;  // off x86-64 quant_kernel() is scalar, which never gets here
#endif
}

}  // namespace

std::string_view quant_matmul_kernel_name() {
  switch (quant_kernel()) {
    case QuantKernel::avx2:
      return "avx2";
    case QuantKernel::avx512_vnni:
      return "avx512_vnni";
    default:
      return "scalar";
  }
}

void quant_matmul(const QuantMatmul& p) {
  quant_matmul_group(std::span(&p, 1));
}

void quant_matmul_group(std::span<const QuantMatmul> problems) {
  for (const QuantMatmul& p : problems) check_quant_matmul(p);
  const QuantKernel kernel = quant_kernel();
  // Q5_0 / Q5_1 on AVX2: their own kernel (quant_gemm_q5.hpp), one product
  // at a time. AVX-512 runs them with the other 32-blocks.
  const auto q5 = [](const QuantMatmul& p) {
    return p.type == GgmlType::q5_0 || p.type == GgmlType::q5_1;
  };
  if (kernel == QuantKernel::avx2 && std::any_of(problems.begin(), problems.end(), q5)) {
    std::vector<QuantMatmul> rest;
    for (const QuantMatmul& p : problems) {
      if (q5(p)) {
        quant_matmul_q5(p);
      } else {
        rest.push_back(p);
      }
    }
    if (!rest.empty()) quant_matmul_group(rest);
    return;
  }
  if (kernel == QuantKernel::scalar) {
    for (const QuantMatmul& p : problems) quant_matmul_reference(p);
    return;
  }
  // The calling thread's, kept between calls; the tasks reach them through
  // these references (a thread_local named in a task is the pool thread's).
  thread_local std::vector<Activations> kept_activations;
  thread_local std::vector<QuantGemmArgs> kept_args;
  thread_local std::vector<int64_t> kept_rows, kept_tasks;
  std::vector<Activations>& staged = kept_activations;
  std::vector<QuantGemmArgs>& args = kept_args;
  std::vector<int64_t>& first_row = kept_rows;    // product i's first row to quantize
  std::vector<int64_t>& first_task = kept_tasks;  // product i's first column task
  if (staged.size() < problems.size()) staged.resize(problems.size());
  args.clear();
  first_row.assign(1, 0);
  first_task.assign(1, 0);
  int64_t quantize_work = 0, work = 0;
  for (size_t i = 0; i < problems.size(); ++i) {
    const QuantMatmul& p = problems[i];
    const bool empty = p.m == 0 || p.n == 0 || p.k == 0;
    if (p.k == 0) std::fill_n(p.out, p.m * p.n, 0.0f);  // empty sums, as the reference's
    // Products of one x whose weights take the same activation blocks (q,
    // k and v; gate and up) quantize it once.
    const QuantGemmArgs* same_x = nullptr;
    for (size_t j = 0; j < i && !same_x && !empty; ++j)
      if (problems[j].x == p.x && problems[j].m == p.m && problems[j].k == p.k &&
          k_quant(problems[j].type) == k_quant(p.type) && first_task[j + 1] > first_task[j])
        same_x = &args[j];
    args.push_back(empty ? QuantGemmArgs{} : prepare(p, staged[i], same_x));
    const bool quantizes = !empty && !same_x;
    first_row.push_back(first_row.back() + (quantizes ? p.m : 0));
    const int64_t column_tasks = (p.n + kColumnsPerTask - 1) / kColumnsPerTask;
    first_task.push_back(first_task.back() +
                         (empty ? 0 : (p.m + kRowsPerTask - 1) / kRowsPerTask * column_tasks));
    if (quantizes) quantize_work += p.m * p.k * kQuantizeCost;
    if (!empty) work += p.m * p.n * p.k;
  }
  // Which product a task of a flat list belongs to.
  const auto product_of = [](const std::vector<int64_t>& first, int64_t task) {
    return static_cast<size_t>(std::upper_bound(first.begin(), first.end(), task) - first.begin() -
                               1);
  };
  cpu::for_each_task(
      first_row.back(), quantize_work, [] { return std::vector<BlockQ8_0>(); },
      [&](int64_t row, std::vector<BlockQ8_0>& blocks) {
        const size_t i = product_of(first_row, row);
        quantize_row(problems[i].x, args[i], row - first_row[i], staged[i], blocks);
      });
  cpu::for_each_task(
      first_task.back(), work, [&] { return make_scratch(args); },
      [&](int64_t task, ScratchBuffers& scratch) {
        const size_t i = product_of(first_task, task);
        const int64_t column_tasks = (args[i].n + kColumnsPerTask - 1) / kColumnsPerTask;
        run_task(args[i], kernel, task - first_task[i], column_tasks, scratch);
      });
}

}  // namespace hive
