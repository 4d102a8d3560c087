// Softmax, top-k and the row gather/scatter that MoE dispatch and combine use.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "base/error.hpp"
#include "kernels/cpu/ops.hpp"

namespace hive::cpu {

void softmax(const Tensor& x) {
  expect(x, DType::f32, 2, "softmax x");
  const int64_t cols = x.shape[1];
  for (int64_t i = 0; i < x.shape[0]; ++i) {
    float* row = x.as<float>() + i * cols;
    const float max_value = *std::max_element(row, row + cols);
    float total = 0.0f;
    for (int64_t j = 0; j < cols; ++j) total += (row[j] = std::exp(row[j] - max_value));
    for (int64_t j = 0; j < cols; ++j) row[j] /= total;
  }
}

void topk(const Tensor& x, int k, const Tensor& values, const Tensor& indices) {
  expect(x, DType::f32, 2, "topk x");
  expect(values, DType::f32, 2, "topk values");
  expect(indices, DType::i32, 2, "topk indices");
  const int64_t n = x.shape[0], cols = x.shape[1];
  check(k >= 1 && k <= cols, "topk: k must be in [1, ", cols, "] (got ", k, ")");
  check(values.shape[0] == n && values.shape[1] == k && indices.shape[0] == n &&
            indices.shape[1] == k,
        "topk: outputs ", values.shape_text(), ", ", indices.shape_text(), " for k=", k);
  std::vector<int32_t> order(static_cast<size_t>(cols));
  for (int64_t i = 0; i < n; ++i) {
    const float* row = x.as<float>() + i * cols;
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [row](int32_t a, int32_t b) {
      return row[a] > row[b] || (row[a] == row[b] && a < b);
    });
    for (int j = 0; j < k; ++j) {
      values.as<float>()[i * k + j] = row[order[static_cast<size_t>(j)]];
      indices.as<int32_t>()[i * k + j] = order[static_cast<size_t>(j)];
    }
  }
}

void normalize_rows(const Tensor& x) {
  expect(x, DType::f32, 2, "normalize_rows x");
  const int64_t cols = x.shape[1];
  for (int64_t i = 0; i < x.shape[0]; ++i) {
    float* row = x.as<float>() + i * cols;
    float total = 0.0f;
    for (int64_t j = 0; j < cols; ++j) total += row[j];
    for (int64_t j = 0; j < cols; ++j) row[j] /= total;
  }
}

void gather_rows(const Tensor& src, const Tensor& index, const Tensor& out) {
  expect(src, DType::f32, 2, "gather_rows src");
  expect(index, DType::i32, 1, "gather_rows index");
  expect(out, DType::f32, 2, "gather_rows out");
  const int64_t d = src.shape[1];
  check(out.shape[0] == index.shape[0] && out.shape[1] == d, "gather_rows: out ", out.shape_text(),
        " for ", index.shape[0], " rows of ", src.shape_text());
  for (int64_t i = 0; i < index.shape[0]; ++i) {
    const int32_t r = index.as<int32_t>()[i];
    check(r >= 0 && r < src.shape[0], "gather_rows: row ", r, " out of range");
    std::copy_n(src.as<float>() + r * d, d, out.as<float>() + i * d);
  }
}

void scatter_add_rows(const Tensor& src, const Tensor& index, const Tensor& weight,
                      const Tensor& out) {
  expect(src, DType::f32, 2, "scatter_add_rows src");
  expect(index, DType::i32, 1, "scatter_add_rows index");
  expect(weight, DType::f32, 1, "scatter_add_rows weight");
  expect(out, DType::f32, 2, "scatter_add_rows out");
  const int64_t d = src.shape[1];
  check(index.shape[0] == src.shape[0] && weight.shape[0] == src.shape[0] && out.shape[1] == d,
        "scatter_add_rows: src ", src.shape_text(), ", index ", index.shape_text(), ", weight ",
        weight.shape_text(), ", out ", out.shape_text(), " disagree");
  for (int64_t i = 0; i < src.shape[0]; ++i) {
    const int32_t r = index.as<int32_t>()[i];
    check(r >= 0 && r < out.shape[0], "scatter_add_rows: row ", r, " out of range");
    const float w = weight.as<float>()[i];
    const float* from = src.as<float>() + i * d;
    float* to = out.as<float>() + r * d;
    for (int64_t j = 0; j < d; ++j) to[j] += w * from[j];
  }
}

}  // namespace hive::cpu
