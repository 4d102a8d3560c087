// out = x @ w^T (+ bias): the reference GEMM, the oracle of matmul_fast.cpp
// and what cpu::matmul runs on the scalar path. An FP8 checkpoint's f8_e4m3
// w (with Tensor::block_scales) is dequantized a row at a time, never whole. Each weight row is
// dotted with every input row (dot.hpp), so the weights are read once per call (at batch 1 this is
// a memory-bound GEMV: bytes(w) per token). Work is split across output features only, so each dot
// product is summed in the same order whatever the thread count.
#include <vector>

#include "base/error.hpp"
#include "kernels/cpu/dot.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/parallel.hpp"

namespace hive::cpu {

namespace {

// Up to this many input rows, a bf16/f16 weight row is widened in every dot
// instead of converted once (the conversion's store and reload cost more).
constexpr int64_t kMaxRowsWidenedInPlace = 4;

}  // namespace

void matmul_reference(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& out) {
  if (is_quantized(w.dtype)) {
    const MatmulProblem problem{x, w, bias, out};
    return matmul_group_quantized(std::span(&problem, 1));
  }
  expect(x, DType::f32, 2, "matmul x");
  expect_matmul_weight(w);
  expect(out, DType::f32, 2, "matmul out");
  const int64_t m = x.shape[0], k = x.shape[1], n = w.shape[0];
  check(w.shape[1] == k && out.shape[0] == m && out.shape[1] == n, "matmul: x ", x.shape_text(),
        " @ w^T ", w.shape_text(), " -> out ", out.shape_text(), " disagree");
  std::vector<float> b(static_cast<size_t>(n), 0.0f);
  if (bias) {
    expect_float(*bias, 1, "matmul bias");
    check(bias->shape[0] == n, "matmul: bias ", bias->shape_text(), " for ", n, " outputs");
    to_f32(bias->data, bias->dtype, n, b.data());
  }
  const float* xs = x.as<float>();
  float* os = out.as<float>();
  const size_t row_bytes = static_cast<size_t>(k) * dtype_size(w.dtype);
  // f32 rows are dotted in place. A bf16/f16 row is widened as it is read
  // when few input rows use it (decode), and converted once into `row` when
  // many do (prefill); both give the same bits, so a row's result does not
  // depend on what it is batched with.
  // An f8_e4m3 row is always dequantized once, whatever m: its values times
  // their block scales, the bits every FP8 path multiplies x by.
  const bool fp8 = w.dtype == DType::f8_e4m3;
  const int64_t scale_cols = (k + kFp8Block - 1) / kFp8Block;
  const bool convert_once = w.dtype != DType::f32 && (m > kMaxRowsWidenedInPlace || fp8);
  for_each_task(
      n, m * n * k, [&] { return std::vector<float>(convert_once ? static_cast<size_t>(k) : 0); },
      [&](int64_t j, std::vector<float>& row) {
        const void* stored = static_cast<const char*>(w.data) + static_cast<size_t>(j) * row_bytes;
        if (fp8)
          f8_e4m3_row_to_f32(static_cast<const uint8_t*>(stored),
                             w.block_scales + j / kFp8Block * scale_cols, k, row.data());
        else if (convert_once)
          to_f32(stored, w.dtype, k, row.data());
        const float bias_j = b[static_cast<size_t>(j)];
        for (int64_t i = 0; i < m; ++i) {
          const float* xi = xs + i * k;
          float sum = 0;
          if (convert_once)
            sum = dot(xi, row.data(), k);
          else if (w.dtype == DType::f32)
            sum = dot(xi, static_cast<const float*>(stored), k);
          else if (w.dtype == DType::bf16)
            sum = dot_bf16(xi, static_cast<const uint16_t*>(stored), k);
          else
            sum = dot_f16(xi, static_cast<const uint16_t*>(stored), k);
          os[i * n + j] = sum + bias_j;
        }
      });
}

}  // namespace hive::cpu
