// out = x @ w^T (+ bias) for a quantized w (a GGUF's Q8_0 .. Q6_K blocks,
// [n, k] as dtype q8_0 ..): quant_matmul (kernels/quant/quant_matmul.hpp)
// on the blocks as they lie in the file's mapping, nothing widened.
// Activations are f32 as for every matmul; the bf16 matmul mode changes
// nothing here (it rounds x only for bf16 weights), since x is quantized to
// 8 bits per block anyway. Each output is quant_matmul's, plus bias[j] in
// one f32 addition, so its bits depend only on x[i, :], w[j, :] and bias[j]:
// batch- and thread-invariant, and the same on every ISA path.
#include <optional>
#include <vector>

#include "base/error.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/quant/quant_matmul.hpp"

namespace hive::cpu {

namespace {

QuantMatmul quant_problem(const MatmulProblem& problem) {
  const Tensor& x = problem.x;
  const Tensor& w = problem.w;
  const Tensor& out = problem.out;
  expect(x, DType::f32, 2, "matmul x");
  expect(out, DType::f32, 2, "matmul out");
  const std::optional<GgmlType> type = ggml_type(w.dtype);
  check(type && quant_matmul_supports(*type) && w.ndim == 2 && w.is_contiguous(),
        "matmul w: expected a contiguous 2-d quantized tensor (got ", w.shape_text(), ")");
  const int64_t m = x.shape[0], k = x.shape[1], n = w.shape[0];
  check(w.shape[1] == k && out.shape[0] == m && out.shape[1] == n, "matmul: x ", x.shape_text(),
        " @ w^T ", w.shape_text(), " -> out ", out.shape_text(), " disagree");
  if (problem.bias) {
    expect_float(*problem.bias, 1, "matmul bias");
    check(problem.bias->shape[0] == n, "matmul: bias ", problem.bias->shape_text(), " for ", n,
          " outputs");
  }
  return {x.as<float>(), w.data, *type, out.as<float>(), m, k, n};
}

void add_bias(const Tensor& bias, const Tensor& out) {
  const int64_t m = out.shape[0], n = out.shape[1];
  std::vector<float> b(static_cast<size_t>(n));
  to_f32(bias.data, bias.dtype, n, b.data());
  float* rows = out.as<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) rows[i * n + j] += b[static_cast<size_t>(j)];
}

}  // namespace

void matmul_group_quantized(std::span<const MatmulProblem> problems) {
  thread_local std::vector<QuantMatmul> kept;
  std::vector<QuantMatmul>& quant = kept;
  quant.clear();
  for (const MatmulProblem& p : problems) quant.push_back(quant_problem(p));
  quant_matmul_group(quant);
  for (const MatmulProblem& p : problems)
    if (p.bias) add_bias(*p.bias, p.out);
}

}  // namespace hive::cpu
