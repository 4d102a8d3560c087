// out = x @ w^T (+ bias): the reference GEMM. Each weight row is converted to
// f32 once and dotted with every input row (dot.hpp), so the weights are read once per
// call (at batch 1 this is a memory-bound GEMV: bytes(w) per token). Work is
// split across output features only, so each dot product is summed in the same
// order whatever the thread count.
#include <vector>

#include "kernels/cpu/dot.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/error.hpp"

namespace hive::cpu {

void matmul(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& out) {
  expect(x, DType::f32, 2, "matmul x");
  expect_float(w, 2, "matmul w");
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
  for_each_task(
      n, m * n * k, [&] { return std::vector<float>(static_cast<size_t>(k)); },
      [&](int64_t j, std::vector<float>& row) {
        to_f32(static_cast<const char*>(w.data) + static_cast<size_t>(j) * row_bytes, w.dtype, k,
               row.data());
        for (int64_t i = 0; i < m; ++i)
          os[i * n + j] = dot(xs + i * k, row.data(), k) + b[static_cast<size_t>(j)];
      });
}

}  // namespace hive::cpu
