// quant_matmul for Q5_0 / Q5_1 weights (quant_gemm_q5.hpp): the activations
// quantized once per call, a task per row; then tasks of output columns by
// rows for the SIMD kernel, each unpacking a weight row once for its rows,
// on the pool.
#include <algorithm>
#include <vector>

#include "kernels/cpu/parallel.hpp"
#include "kernels/quant/dequantize.hpp"
#include "kernels/quant/quant_gemm_q5.hpp"
#include "kernels/quant/quant_matmul.hpp"
#include "kernels/quant/quantize.hpp"

namespace hive {

namespace {

constexpr int64_t kColumnsPerTask = 16;
constexpr int64_t kRowsPerTask = 64;
constexpr int64_t kQuantizeCost = 8;

// A thread's Q5Row.
struct Q5RowBuffers {
  std::vector<uint8_t> q;
  std::vector<float> d, m;
  explicit Q5RowBuffers(int64_t blocks)
      : q(static_cast<size_t>(blocks * kQK)),
        d(static_cast<size_t>(blocks)),
        m(static_cast<size_t>(blocks)) {}
  Q5Row view() { return {q.data(), d.data(), m.data()}; }
};

}  // namespace

void quant_matmul_q5(const QuantMatmul& p) {
  if (p.m == 0 || p.n == 0) return;
  if (p.k == 0) {  // empty sums, as the reference's
    std::fill_n(p.out, p.m * p.n, 0.0f);
    return;
  }
  Q5GemmArgs a;
  a.type = p.type;
  a.w = static_cast<const char*>(p.w);
  a.blocks = p.k / kQK;
  a.w_row_bytes = a.blocks * ggml_type_info(p.type).block_bytes;
  a.m = p.m;
  a.n = p.n;
  a.out = p.out;
  // The calling thread's, kept between calls.
  thread_local std::vector<int8_t> kept_qs;
  thread_local std::vector<float> kept_d;
  thread_local std::vector<int32_t> kept_sums;
  std::vector<int8_t>& qs = kept_qs;
  std::vector<float>& d = kept_d;
  std::vector<int32_t>& sums = kept_sums;
  qs.resize(static_cast<size_t>(p.m * a.blocks * kQK));
  d.resize(static_cast<size_t>(p.m * a.blocks));
  sums.resize(static_cast<size_t>(p.m * a.blocks));
  a.x_qs = qs.data();
  a.x_d = d.data();
  a.x_sums = sums.data();
  cpu::for_each_task(
      p.m, p.m * p.k * kQuantizeCost, [] { return std::vector<BlockQ8_0>(); },
      [&](int64_t i, std::vector<BlockQ8_0>& blocks) {
        blocks.resize(static_cast<size_t>(a.blocks));
        quantize_row_q8_0(p.x + i * p.k, p.k, blocks.data());
        for (int64_t b = 0; b < a.blocks; ++b) {
          const BlockQ8_0& block = blocks[static_cast<size_t>(b)];
          const auto at = static_cast<size_t>(i * a.blocks + b);
          std::copy_n(block.qs, kQK, qs.data() + at * kQK);
          d[at] = half_bits_to_f32(block.d);
          int32_t sum = 0;
          for (const int8_t q : block.qs) sum += q;
          sums[at] = sum;
        }
      });
  const int64_t column_tasks = (p.n + kColumnsPerTask - 1) / kColumnsPerTask;
  const int64_t row_tasks = (p.m + kRowsPerTask - 1) / kRowsPerTask;
  cpu::for_each_task(
      column_tasks * row_tasks, p.m * p.n * p.k, [&] { return Q5RowBuffers(a.blocks); },
      [&](int64_t task, Q5RowBuffers& buffers) {
        const int64_t begin = task % column_tasks * kColumnsPerTask;
        const int64_t end = std::min(p.n, begin + kColumnsPerTask);
        const int64_t first_row = task / column_tasks * kRowsPerTask;
        Q5GemmArgs rows = a;
        rows.m = std::min(kRowsPerTask, p.m - first_row);
        rows.out += first_row * p.n;
        rows.x_qs += first_row * 32 * a.blocks;
        rows.x_d += first_row * a.blocks;
        rows.x_sums += first_row * a.blocks;
#if defined(__x86_64__)
        quant_gemm_q5_avx2(rows, begin, end, buffers.view());
#else
        // off x86-64 quant_matmul runs the reference, never this
        (void)rows;
        (void)begin;
        (void)end;
        (void)buffers;
#endif
      });
}

}  // namespace hive
