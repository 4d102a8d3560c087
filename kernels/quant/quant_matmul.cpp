// quant_matmul on the CPU kernel path: the activations quantized once per
// call (a task per row, on the pool), then the SIMD kernels of
// quant_gemm_kernels.hpp over blocks of output columns, on the pool. Every
// output's order is fixed by quant_matmul.hpp, so the split changes no bit.
#include "kernels/quant/quant_matmul.hpp"

#include <algorithm>
#include <vector>

#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/quant/dequantize.hpp"
#include "kernels/quant/quant_gemm_kernels.hpp"
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

// The calling thread's activations, kept between calls.
struct Activations {
  std::vector<int8_t> qs;
  std::vector<float> d;
  std::vector<BlockQ8_K> k_blocks;
};

// x's rows quantized into `staged`, and the kernels' view of them.
QuantGemmArgs quantize_activations(const QuantMatmul& p, Activations& staged) {
  QuantGemmArgs a;
  a.type = p.type;
  a.w = static_cast<const char*>(p.w);
  a.w_row_bytes = p.k / ggml_type_info(p.type).block_size * ggml_type_info(p.type).block_bytes;
  a.m = p.m;
  a.k = p.k;
  a.n = p.n;
  a.out = p.out;
  if (k_quant(p.type)) {
    staged.k_blocks.resize(static_cast<size_t>(p.m * p.k / kQKK));
    a.x_k = staged.k_blocks.data();
  } else {
    a.x_blocks = (p.k / kQK + 1) / 2 * 2;
    staged.qs.assign(static_cast<size_t>(p.m * a.x_blocks * kQK), 0);
    staged.d.assign(static_cast<size_t>(p.m * a.x_blocks), 0.0f);
    a.x_qs = staged.qs.data();
    a.x_d = staged.d.data();
  }
  cpu::for_each_task(
      p.m, p.m * p.k * kQuantizeCost, [] { return std::vector<BlockQ8_0>(); },
      [&](int64_t i, std::vector<BlockQ8_0>& blocks) {
        const float* row = p.x + i * p.k;
        if (a.x_k) return quantize_row_q8_k(row, p.k, staged.k_blocks.data() + i * p.k / kQKK);
        blocks.resize(static_cast<size_t>(p.k / kQK));
        quantize_row_q8_0(row, p.k, blocks.data());
        for (size_t b = 0; b < blocks.size(); ++b) {
          const int64_t at = i * a.x_blocks + static_cast<int64_t>(b);
          std::copy_n(blocks[b].qs, kQK, staged.qs.data() + at * kQK);
          staged.d[static_cast<size_t>(at)] = half_bits_to_f32(blocks[b].d);
        }
      });
  return a;
}

// A thread's scratch for the kernels.
struct ScratchBuffers {
  std::vector<PairQ8_0> pairs;
  std::vector<UnpackedK> blocks;
  std::vector<float> acc;
  QuantScratch view() { return {pairs.data(), blocks.data(), acc.data()}; }
};

ScratchBuffers make_scratch(const QuantGemmArgs& a) {
  ScratchBuffers s;
  if (a.x_k) {
    s.blocks.resize(static_cast<size_t>(a.k / kQKK));
  } else {
    s.pairs.resize(static_cast<size_t>(a.x_blocks / 2));
  }
  s.acc.resize(static_cast<size_t>(16 * std::min(a.m, kRowsPerTask)));
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
  check_quant_matmul(p);
  const QuantKernel kernel = quant_kernel();
  if (kernel == QuantKernel::scalar) return quant_matmul_reference(p);
  if (p.m == 0 || p.n == 0) return;
  if (p.k == 0) {  // empty sums, as the reference's
    std::fill_n(p.out, p.m * p.n, 0.0f);
    return;
  }
  thread_local Activations kept_activations;
  Activations& staged = kept_activations;  // the tasks reach it through this reference
  const QuantGemmArgs args = quantize_activations(p, staged);
  const int64_t column_tasks = (p.n + kColumnsPerTask - 1) / kColumnsPerTask;
  const int64_t tasks = (p.m + kRowsPerTask - 1) / kRowsPerTask * column_tasks;
  cpu::for_each_task(
      tasks, p.m * p.n * p.k, [&] { return make_scratch(args); },
      [&](int64_t task, ScratchBuffers& scratch) {
        run_task(args, kernel, task, column_tasks, scratch);
      });
}

}  // namespace hive
