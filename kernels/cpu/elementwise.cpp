// Row-wise and elementwise reference ops.
#include <cmath>
#include <vector>

#include "kernels/cpu/ops.hpp"
#include "kernels/error.hpp"

namespace hive::cpu {

void embedding(const Tensor& table, const Tensor& ids, const Tensor& out) {
  expect_float(table, 2, "embedding table");
  expect(ids, DType::i32, 1, "embedding ids");
  expect(out, DType::f32, 2, "embedding out");
  const int64_t vocab = table.shape[0], dim = table.shape[1];
  check(out.shape[0] == ids.shape[0] && out.shape[1] == dim, "embedding: out ", out.shape_text(),
        " does not match ids ", ids.shape_text(), " and table ", table.shape_text());
  const size_t row_bytes = static_cast<size_t>(dim) * dtype_size(table.dtype);
  for (int64_t i = 0; i < ids.shape[0]; ++i) {
    const int32_t id = ids.as<int32_t>()[i];
    check(id >= 0 && id < vocab, "embedding: token id ", id, " out of range [0, ", vocab, ")");
    to_f32(static_cast<const char*>(table.data) + static_cast<size_t>(id) * row_bytes, table.dtype,
           dim, out.as<float>() + i * dim);
  }
}

void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) {
  expect(x, DType::f32, 2, "rms_norm x");
  expect(out, DType::f32, 2, "rms_norm out");
  expect_float(weight, 1, "rms_norm weight");
  const int64_t n = x.shape[0], dim = x.shape[1];
  check(out.shape[0] == n && out.shape[1] == dim && weight.shape[0] == dim, "rms_norm: shapes ",
        x.shape_text(), ", ", weight.shape_text(), ", ", out.shape_text(), " disagree");
  std::vector<float> w(static_cast<size_t>(dim));
  to_f32(weight.data, weight.dtype, dim, w.data());
  for (int64_t i = 0; i < n; ++i) {
    const float* xi = x.as<float>() + i * dim;
    float* oi = out.as<float>() + i * dim;
    float sum = 0.0f;
    for (int64_t j = 0; j < dim; ++j) sum += xi[j] * xi[j];
    const float inv = 1.0f / std::sqrt(sum / static_cast<float>(dim) + eps);
    for (int64_t j = 0; j < dim; ++j) oi[j] = w[static_cast<size_t>(j)] * (xi[j] * inv);
  }
}

void rope(const Tensor& x, const Tensor& positions, const Tensor& inv_freq) {
  expect(x, DType::f32, 3, "rope x");
  expect(positions, DType::i32, 1, "rope positions");
  expect(inv_freq, DType::f32, 1, "rope inv_freq");
  const int64_t n = x.shape[0], heads = x.shape[1], head_dim = x.shape[2], half = head_dim / 2;
  check(positions.shape[0] == n && head_dim % 2 == 0 && inv_freq.shape[0] == half, "rope: shapes ",
        x.shape_text(), ", ", positions.shape_text(), ", ", inv_freq.shape_text(), " disagree");
  std::vector<float> cos_row(static_cast<size_t>(half)), sin_row(static_cast<size_t>(half));
  for (int64_t i = 0; i < n; ++i) {
    // Angles in f32, as transformers computes them.
    const float pos = static_cast<float>(positions.as<int32_t>()[i]);
    for (int64_t j = 0; j < half; ++j) {
      const float angle = pos * inv_freq.as<float>()[j];
      cos_row[static_cast<size_t>(j)] = std::cos(angle);
      sin_row[static_cast<size_t>(j)] = std::sin(angle);
    }
    for (int64_t h = 0; h < heads; ++h) {
      float* v = x.as<float>() + (i * heads + h) * head_dim;
      for (int64_t j = 0; j < half; ++j) {
        const float a = v[j], b = v[j + half];
        const float c = cos_row[static_cast<size_t>(j)], s = sin_row[static_cast<size_t>(j)];
        v[j] = a * c - b * s;
        v[j + half] = b * c + a * s;
      }
    }
  }
}

void add(const Tensor& a, const Tensor& b, const Tensor& out) {
  check(a.dtype == DType::f32 && b.dtype == DType::f32 && out.dtype == DType::f32 &&
            a.numel() == b.numel() && a.numel() == out.numel(),
        "add: shapes ", a.shape_text(), ", ", b.shape_text(), ", ", out.shape_text(), " disagree");
  const int64_t n = a.numel();
  for (int64_t i = 0; i < n; ++i) out.as<float>()[i] = a.as<float>()[i] + b.as<float>()[i];
}

void mul_rows(const Tensor& x, const Tensor& scale) {
  expect(x, DType::f32, 2, "mul_rows x");
  expect(scale, DType::f32, 1, "mul_rows scale");
  check(scale.shape[0] == x.shape[0], "mul_rows: ", scale.shape_text(), " scales for ",
        x.shape_text());
  for (int64_t i = 0; i < x.shape[0]; ++i)
    for (int64_t j = 0; j < x.shape[1]; ++j)
      x.as<float>()[i * x.shape[1] + j] *= scale.as<float>()[i];
}

void silu_mul(const Tensor& gate, const Tensor& up, const Tensor& out) {
  check(gate.dtype == DType::f32 && up.dtype == DType::f32 && out.dtype == DType::f32 &&
            gate.numel() == up.numel() && gate.numel() == out.numel(),
        "silu_mul: shapes ", gate.shape_text(), ", ", up.shape_text(), ", ", out.shape_text(),
        " disagree");
  for (int64_t i = 0; i < gate.numel(); ++i) {
    const float g = gate.as<float>()[i];
    out.as<float>()[i] = g / (1.0f + std::exp(-g)) * up.as<float>()[i];
  }
}

void sigmoid(const Tensor& x) {
  check(x.dtype == DType::f32, "sigmoid: expected f32 (got ", x.shape_text(), ")");
  for (int64_t i = 0; i < x.numel(); ++i)
    x.as<float>()[i] = 1.0f / (1.0f + std::exp(-x.as<float>()[i]));
}

void fill(const Tensor& x, float value) {
  check(x.dtype == DType::f32 && x.is_contiguous(), "fill: expected a contiguous f32 tensor (got ",
        x.shape_text(), ")");
  float* data = x.as<float>();
  for (int64_t i = 0; i < x.numel(); ++i) data[i] = value;
}

}  // namespace hive::cpu
