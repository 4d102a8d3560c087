// out = x @ w^T (+ bias) on the CPU kernel path: the SIMD kernels of
// gemm_kernels.hpp over blocks of output columns, on the thread pool. Each
// block's weights are read once per call for all rows of x (at batch 1, a
// GEMV bound by bytes(w) per token; for m rows the same bytes serve m
// tokens), and every output's reduction order is fixed (gemm_kernels.hpp),
// so a row's bits do not depend on m, on its neighbours or on the threads.
#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/gemm_kernels.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/parallel.hpp"

namespace hive::cpu {

#if defined(__x86_64__)
namespace {

// Output columns per task: 16 bf16 rows of k = 1024 are 32 KiB, an L1's
// worth, and a 0.35B model's smallest projection still makes 64 tasks.
constexpr int64_t kColumnsPerTask = 16;
// The bf16 mode's tasks: a block of bf16 weight rows meant to stay in a
// 48 KiB L1 beside a row tile of x, from this many rows.
constexpr int64_t kL1BlockBytes = 40 << 10;
constexpr int64_t kMinRowsForL1Blocks = 16;
// The amx kernel's tasks: 4 blocks of 16 weight rows, which a decode's
// one block of x passes over at once (gemm_amx.cpp).
constexpr int64_t kAmxColumnsPerTask = 64;
// The AVX2 halves tiles are 3 columns wide: 15 leaves no 1-column strip.
constexpr int64_t kHalvesColumnsPerTask = 15;
// x bytes one task's rows may take (in the layout its kernel reads): half
// of a 1 MiB L2. A task reads its rows once per column tile of its block, so
// they must stay in L2 beside the task's weights: a prefill's 512 rows (2.8
// MiB for a down projection's k = 2816 in bf16) did not, and every task
// streamed all of them again from L3, which two cores could not feed
// (docs/benchmarks.md). Tasks go row block by row block, so the threads
// share one at a time. Each row block reads the weights again, so a task
// takes at least kMinRowsPerTask rows: decode's steps, bound by reading the
// weights, read them once.
constexpr int64_t kRowBlockBytes = 512 << 10;
constexpr int64_t kMinRowsPerTask = 64;
// Row blocks are whole tiles of every kernel (6 rows AVX-512, 4 and 2 AVX2),
// and for the amx kernel whole pairs of its 16-row blocks.
constexpr int64_t kRowBlockMultiple = 12;
constexpr int64_t kAmxRowBlockMultiple = 32;
// AVX2: from this many rows (a full 4 x 3 tile) x and each block's weights
// are laid out in halves (gemm_kernels.hpp); below, the 2 x 2 tiles read the
// bf16 rows as stored, which is what decode's memory-bound steps want.
constexpr int64_t kMinRowsInHalves = 4;
// f8_e4m3 weights: up to this many rows (one 6-row tile of the AVX-512
// kernel) each tile widens its weights as it loads them; past it, a task
// widens its block into f32 scratch once and its row tiles read that
// (gemm_avx512.cpp), since widening costs 8 vector operations per 16
// weights against a tile's 6 multiply-adds.
constexpr int64_t kFp8RowsConvertedInTiles = 6;

// x [m, k] -> the halves layout [m, k16], zero-padded.
void to_halves(const float* x, int64_t m, int64_t k, std::vector<float>& out) {
  const int64_t k16 = (k + 15) / 16 * 16, half = k16 / 2;
  out.resize(static_cast<size_t>(m * k16));  // every element is written below
  for (int64_t i = 0; i < m; ++i) {
    const float* row = x + i * k;
    float* lo = out.data() + i * k16;
    float* hi = lo + half;
    for (int64_t p = 0; p < k; p += 16) {
      const int64_t in_lo = std::min<int64_t>(8, k - p);
      const int64_t in_hi = std::clamp<int64_t>(k - p - 8, 0, 8);
      std::fill(std::copy_n(row + p, in_lo, lo + p / 2), lo + p / 2 + 8, 0.0f);
      std::fill(std::copy_n(row + p + 8, in_hi, hi + p / 2), hi + p / 2 + 8, 0.0f);
    }
  }
}

// Rows per task for m rows of row_bytes each: as few row blocks as keep
// each within kRowBlockBytes, of about equal size.
int64_t rows_per_task(int64_t m, int64_t row_bytes, int64_t multiple) {
  const int64_t blocks =
      std::max<int64_t>(1, (m * row_bytes + kRowBlockBytes - 1) / kRowBlockBytes);
  const int64_t rows = std::max(kMinRowsPerTask, (m + blocks - 1) / blocks);
  return (rows + multiple - 1) / multiple * multiple;
}

// Values of x_amx for m rows of k: whole 16-row blocks, and past an odd
// number of them above one the zero block the kernel's pairs read.
int64_t amx_values(int64_t m, int64_t k) {
  int64_t blocks = (m + 15) / 16;
  if (blocks > 1 && blocks % 2 == 1) ++blocks;
  return blocks * 16 * 32 * amx_chunks(k);
}

// Elements of x one rounding task takes, and what rounding one costs in
// multiply-adds (a load, a convert and a store per 16, against 32
// multiply-adds per vdpbf16ps), for the pool's threshold.
constexpr int64_t kRoundBlock = 16384;
constexpr int64_t kRoundCost = 4;

GemmWeights gemm_weights(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return GemmWeights::f16;
    case DType::bf16:
      return GemmWeights::bf16;
    case DType::f8_e4m3:
      return GemmWeights::f8_e4m3;
    default:
      return GemmWeights::f32;
  }
}

}  // namespace
#endif

#if defined(__x86_64__)
namespace {

// A product of a group made ready for its column tasks: the kernel's
// arguments, and how its columns split into tasks. Everything here is what
// a lone matmul() decides, so each output keeps its bits in any group.
struct Prepared {
  GemmArgs args;
  bool bf16_mode = false;
  bool amx = false;                   // the bf16 mode's amx kernel
  bool avx512 = false;                // else the AVX2 kernel
  int64_t columns = kColumnsPerTask;  // output columns per task
  int64_t rows = 0;                   // rows of x per task
  int64_t column_tasks = 0;           // tasks per row block
  int64_t tasks = 0;
  size_t scratch_floats = 0;      // per task: the AVX2 halves layout, or the f8_e4m3 block; 0: none
  uint16_t* rounded_x = nullptr;  // x_bf16 (x_amx) when it is this product's own
};

// The calling thread's buffers for x's layouts and a converted bias, one set
// per product of a group; kept between calls, so a step's layers reuse them.
struct Staging {
  std::vector<uint16_t> x_bf16;
  std::vector<float> x_halves;
  std::vector<float> bias;
};

// count values of `buffer` that start on a cache line. The kernels load x
// 64 bytes at a time: from malloc's 16-byte alignment every load split over
// two lines, which a tile of few rows, one x load per vdpbf16ps, paid for.
uint16_t* cache_line_aligned(std::vector<uint16_t>& buffer, int64_t count) {
  constexpr size_t kLine = 64, kValuesPerLine = kLine / sizeof(uint16_t);
  buffer.resize(static_cast<size_t>(count) + kValuesPerLine);
  const auto address = reinterpret_cast<uintptr_t>(buffer.data());
  return buffer.data() + (kLine - address % kLine) % kLine / sizeof(uint16_t);
}

Prepared prepare(const MatmulProblem& problem, CpuPath path, Staging& staging,
                 const Prepared* same_x) {
  const Tensor& x = problem.x;
  const Tensor& w = problem.w;
  const Tensor& out = problem.out;
  expect(x, DType::f32, 2, "matmul x");
  expect_matmul_weight(w);
  expect(out, DType::f32, 2, "matmul out");
  const int64_t m = x.shape[0], k = x.shape[1], n = w.shape[0];
  check(w.shape[1] == k && out.shape[0] == m && out.shape[1] == n, "matmul: x ", x.shape_text(),
        " @ w^T ", w.shape_text(), " -> out ", out.shape_text(), " disagree");
  Prepared p;
  p.args = {x.as<float>(), w.data, gemm_weights(w.dtype), nullptr, out.as<float>(), m, k, n};
  p.args.block_scales = w.block_scales;
  if (problem.bias) {
    const Tensor& bias = *problem.bias;
    expect_float(bias, 1, "matmul bias");
    check(bias.shape[0] == n, "matmul: bias ", bias.shape_text(), " for ", n, " outputs");
    if (bias.dtype == DType::f32) {
      p.args.bias = bias.as<float>();
    } else {
      staging.bias.resize(static_cast<size_t>(n));
      to_f32(bias.data, bias.dtype, n, staging.bias.data());
      p.args.bias = staging.bias.data();
    }
  }
  if (m == 0 || n == 0) return p;
  if (w.dtype == DType::bf16 && bf16_matmul_active()) {
    // The opt-in bf16 mode (cpu_features.hpp): x rounded once per group,
    // by round_group.
    p.bf16_mode = true;
    p.amx = path == CpuPath::amx;
    if (same_x && same_x->bf16_mode) {
      p.args.x_bf16 = same_x->args.x_bf16;
      p.args.x_amx = same_x->args.x_amx;
    } else if (p.amx) {
      p.rounded_x = cache_line_aligned(staging.x_bf16, amx_values(m, k));
      p.args.x_amx = p.rounded_x;
    } else {
      p.rounded_x = cache_line_aligned(staging.x_bf16, m * k);
      p.args.x_bf16 = p.rounded_x;
    }
    // With many rows a task's bf16 block is read again by every row tile:
    // a long reduction (a down projection's) takes half the columns, so the
    // block stays in L1. Decode keeps wide tasks, where the bytes stream once.
    p.columns = p.amx ? kAmxColumnsPerTask
                : m >= kMinRowsForL1Blocks && k * 2 * kColumnsPerTask > kL1BlockBytes
                    ? kColumnsPerTask / 2
                    : kColumnsPerTask;
  } else {
    // By default avx512_bf16 and amx run the AVX-512 f32 kernel too: the
    // golden tests hold f32 models to 1e-4 of transformers, and bf16 dot
    // products (or AMX tiles) round activations to bf16.
    p.avx512 = path >= CpuPath::avx512;
    if (!p.avx512 && m >= kMinRowsInHalves) {
      if (same_x && same_x->args.x_halves) {
        p.args.x_halves = same_x->args.x_halves;
      } else {
        to_halves(p.args.x, m, k, staging.x_halves);
        p.args.x_halves = staging.x_halves.data();
      }
      p.columns = kHalvesColumnsPerTask;
      p.scratch_floats = static_cast<size_t>(p.columns * ((k + 15) / 16 * 16));
    }
    // f8_e4m3 weights reach here on the AVX-512 paths only (matmul_group).
    // Past one row tile a task widens its block once, into scratch.
    if (w.dtype == DType::f8_e4m3 && m > kFp8RowsConvertedInTiles)
      p.scratch_floats = static_cast<size_t>(p.columns * k);
  }
  const int64_t row_bytes = p.amx             ? amx_chunks(k) * 64
                            : p.bf16_mode     ? k * 2
                            : p.args.x_halves ? (k + 15) / 16 * 16 * 4
                                              : k * 4;
  p.rows = rows_per_task(m, row_bytes, p.amx ? kAmxRowBlockMultiple : kRowBlockMultiple);
  p.column_tasks = (n + p.columns - 1) / p.columns;
  p.tasks = (m + p.rows - 1) / p.rows * p.column_tasks;
  return p;
}

// Rounds the x of every product that owns its x_bf16 (or packs its x_amx,
// a task per 16-row block), all of them as one job on the pool: a
// prefill's x, or a step's experts' x together, left the other threads
// idle while the calling thread rounded them alone. Each element is rounded
// alone, so the split changes no bit.
void round_group(std::span<const Prepared> prepared) {
  thread_local std::vector<std::pair<const Prepared*, int64_t>> kept_blocks;
  std::vector<std::pair<const Prepared*, int64_t>>& blocks = kept_blocks;  // product, first
  blocks.clear();
  int64_t elements = 0;
  for (const Prepared& p : prepared) {
    if (!p.rounded_x) continue;
    const int64_t count = p.args.m * p.args.k;
    if (p.amx) {  // first: a block of 16 rows
      const int64_t amx_blocks = amx_values(p.args.m, p.args.k) / (16 * 32 * amx_chunks(p.args.k));
      for (int64_t block = 0; block < amx_blocks; ++block) blocks.push_back({&p, block});
    } else {
      for (int64_t first = 0; first < count; first += kRoundBlock) blocks.push_back({&p, first});
    }
    elements += count;
  }
  for_each_task(
      static_cast<int64_t>(blocks.size()), elements * kRoundCost, [] { return 0; },
      [&](int64_t task, int&) {
        const auto [p, first] = blocks[static_cast<size_t>(task)];
        if (p->amx) return pack_x_amx(p->args.x, p->args.m, p->args.k, first, p->rounded_x);
        const int64_t count = std::min(kRoundBlock, p->args.m * p->args.k - first);
        round_to_bf16_avx512_bf16(p->args.x + first, count, p->rounded_x + first);
      });
}

// Task t: row block t / column_tasks, column block t % column_tasks.
void run_task(const Prepared& p, int64_t task, float* scratch) {
  const int64_t begin = task % p.column_tasks * p.columns;
  const int64_t end = std::min(p.args.n, begin + p.columns);
  const int64_t first_row = task / p.column_tasks * p.rows;
  GemmArgs a = p.args;
  a.m = std::min(p.rows, a.m - first_row);
  a.x += first_row * a.k;
  a.out += first_row * a.n;
  if (a.x_bf16) a.x_bf16 += first_row * a.k;
  if (a.x_amx) a.x_amx += first_row * amx_chunks(a.k) * 32;
  if (a.x_halves) a.x_halves += first_row * ((a.k + 15) / 16 * 16);
  if (p.amx) return gemm_columns_amx(a, begin, end);
  if (p.bf16_mode) return gemm_columns_avx512_bf16(a, begin, end);
  if (p.avx512) {
    if (p.scratch_floats > 0) a.w_scratch = scratch;
    return gemm_columns_avx512(a, begin, end);
  }
  gemm_columns_avx2(a, begin, end, p.scratch_floats > 0 ? scratch : nullptr);
}

}  // namespace
#endif

void matmul(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& out) {
  const MatmulProblem problem{x, w, bias, out};
  matmul_group(std::span(&problem, 1));
}

// A task's columns start on a multiple of kColumnsPerTask, and the kernel's
// tiles of 4 inside it, so no tile straddles two rows of f8_e4m3 scales.
#if defined(__x86_64__)
static_assert(kFp8Block % kColumnsPerTask == 0 && kColumnsPerTask % 4 == 0);
#endif

void matmul_group(std::span<const MatmulProblem> problems) {
  // Quantized weights take their own job (matmul_quantized.cpp); a group
  // mixes them with float ones only when a file does.
  const auto quantized = [](const MatmulProblem& p) { return is_quantized(p.w.dtype); };
  if (std::all_of(problems.begin(), problems.end(), quantized) && !problems.empty())
    return matmul_group_quantized(problems);
  if (std::any_of(problems.begin(), problems.end(), quantized)) {
    std::vector<MatmulProblem> quant, plain;
    for (const MatmulProblem& p : problems) (quantized(p) ? quant : plain).push_back(p);
    matmul_group_quantized(quant);
    if (plain.empty()) return;
    return matmul_group(plain);
  }
#if !defined(__x86_64__)
  // Off x86-64 the kernels are not built and scalar is the only path.
  for (const MatmulProblem& p : problems) matmul_reference(p.x, p.w, p.bias, p.out);
#else
  const CpuPath path = cpu_kernel_path();
  if (path == CpuPath::scalar) {
    for (const MatmulProblem& p : problems) matmul_reference(p.x, p.w, p.bias, p.out);
    return;
  }
  // f8_e4m3 weights have an AVX-512 kernel only; below it, the reference.
  const auto fp8 = [](const MatmulProblem& p) { return p.w.dtype == DType::f8_e4m3; };
  if (path < CpuPath::avx512 && std::any_of(problems.begin(), problems.end(), fp8)) {
    std::vector<MatmulProblem> plain;
    for (const MatmulProblem& p : problems) {
      if (fp8(p))
        matmul_reference(p.x, p.w, p.bias, p.out);
      else
        plain.push_back(p);
    }
    if (plain.empty()) return;
    return matmul_group(plain);
  }
  // The calling thread's, kept between calls: a step makes hundreds of
  // these calls, and none of them is made from inside another's tasks. The
  // tasks run on the pool's threads, so they reach these through the local
  // references below: a thread_local named inside a task would be the pool
  // thread's own, empty one.
  thread_local std::vector<Staging> kept_staging;
  thread_local std::vector<Prepared> kept_prepared;
  thread_local std::vector<int64_t> kept_first_task;
  std::vector<Staging>& staging = kept_staging;
  std::vector<Prepared>& prepared = kept_prepared;
  std::vector<int64_t>& first_task = kept_first_task;  // problem i's first task in the one list
  if (staging.size() < problems.size()) staging.resize(problems.size());
  prepared.clear();
  prepared.reserve(problems.size());
  first_task.assign(1, 0);
  size_t scratch_floats = 0;
  int64_t work = 0;
  for (size_t i = 0; i < problems.size(); ++i) {
    // Products of one x (q, k, v) lay it out once.
    const Prepared* same_x = nullptr;
    for (size_t j = 0; j < i && !same_x; ++j)
      if (problems[j].x.data == problems[i].x.data && problems[j].x.shape == problems[i].x.shape)
        same_x = &prepared[j];
    prepared.push_back(prepare(problems[i], path, staging[i], same_x));
    const Prepared& p = prepared.back();
    first_task.push_back(first_task.back() + p.tasks);
    scratch_floats = std::max(scratch_floats, p.scratch_floats);
    work += p.args.m * p.args.n * p.args.k;
  }
  round_group(prepared);
  for_each_task(
      first_task.back(), work, [&] { return std::vector<float>(scratch_floats); },
      [&](int64_t task, std::vector<float>& scratch) {
        const auto i = static_cast<size_t>(
            std::upper_bound(first_task.begin(), first_task.end(), task) - first_task.begin() - 1);
        run_task(prepared[i], task - first_task[i], scratch.data());
      });
#endif
}

}  // namespace hive::cpu
