// Row-wise and elementwise reference ops.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "base/error.hpp"
#include "kernels/cpu/dot.hpp"
#include "kernels/cpu/isa_clones.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/vector_exp.hpp"
#include "kernels/quant/dequantize.hpp"

namespace hive::cpu {

namespace {

// body(begin, end) over [0, count) in blocks of `block` items, on the pool
// when count * cost (multiply-adds, or their like) reaches kMinParallelWork:
// a long prompt's activations are millions of elements, and one thread
// alone between two matmuls leaves the other cores idle. Every item is
// computed alone, so the bits do not depend on the split.
template <class Body>
void for_each_block(int64_t count, int64_t block, int64_t cost, const Body& body) {
  const int64_t tasks = (count + block - 1) / block;
  for_each_task(
      tasks, count * cost, [] { return 0; },
      [&](int64_t task, int&) { body(task * block, std::min(count, (task + 1) * block)); });
}

// Rows per block: about kBlockElements elements.
constexpr int64_t kBlockElements = 16384;
int64_t rows_per_block(int64_t row_elements) {
  return std::max<int64_t>(1, kBlockElements / std::max<int64_t>(1, row_elements));
}

// What an exp costs, in multiply-adds, for the pool's threshold.
constexpr int64_t kExpCost = 16;

// Built for x86-64-v4, v3 (AVX2, FMA) and the baseline (isa_clones.hpp):
// every copy gives the bits of vector_exp's explicit fmas.
#define HIVE_ELEMENTWISE_CLONES HIVE_CLONES_UP_TO_V4

// out = silu(gate) * up over [begin, end), silu(g) = g / (1 + e^-g).
HIVE_ELEMENTWISE_CLONES void silu_mul_range(const float* gate, const float* up, float* out,
                                            int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + vector_exp(-g)) * up[i];
  }
}

}  // namespace

void embedding(const Tensor& table, const Tensor& ids, const Tensor& out) {
  // A quantized table (a GGUF's token_embd) is read as llama.cpp's get_rows
  // reads it: each row dequantized exactly to f32.
  const std::optional<GgmlType> blocks =
      is_quantized(table.dtype) ? ggml_type(table.dtype) : std::nullopt;
  check(blocks || is_float(table.dtype),
        "embedding table: expected a float or quantized tensor (got ", table.shape_text(), ")");
  check(table.ndim == 2 && table.is_contiguous(), "embedding table: expected a contiguous 2-d ",
        "tensor (got ", table.shape_text(), ")");
  expect(ids, DType::i32, 1, "embedding ids");
  expect(out, DType::f32, 2, "embedding out");
  const int64_t vocab = table.shape[0], dim = table.shape[1];
  check(out.shape[0] == ids.shape[0] && out.shape[1] == dim, "embedding: out ", out.shape_text(),
        " does not match ids ", ids.shape_text(), " and table ", table.shape_text());
  const auto row_bytes = static_cast<size_t>(dtype_bytes(table.dtype, dim));
  for (int64_t i = 0; i < ids.shape[0]; ++i) {
    const int32_t id = ids.as<int32_t>()[i];
    check(id >= 0 && id < vocab, "embedding: token id ", id, " out of range [0, ", vocab, ")");
    const char* row = static_cast<const char*>(table.data) + static_cast<size_t>(id) * row_bytes;
    if (blocks) {
      dequantize_to_f32(*blocks, row, dim, out.as<float>() + i * dim);
    } else {
      to_f32(row, table.dtype, dim, out.as<float>() + i * dim);
    }
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
  const float* x_data = x.as<float>();
  float* out_data = out.as<float>();
  for_each_block(n, rows_per_block(dim), 2 * dim, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float* xi = x_data + i * dim;
      float* oi = out_data + i * dim;
      // In dot's 16 partial sums: one running sum was a chain of dim
      // dependent adds, latency-bound on every row of a prompt.
      const float sum = dot(xi, xi, dim);
      const float inv = 1.0f / std::sqrt(sum / static_cast<float>(dim) + eps);
      for (int64_t j = 0; j < dim; ++j) oi[j] = w[static_cast<size_t>(j)] * (xi[j] * inv);
    }
  });
}

void rope(const Tensor& x, const Tensor& positions, const Tensor& inv_freq) {
  expect(x, DType::f32, 3, "rope x");
  expect(positions, DType::i32, 1, "rope positions");
  expect(inv_freq, DType::f32, 1, "rope inv_freq");
  const int64_t n = x.shape[0], heads = x.shape[1], head_dim = x.shape[2], half = head_dim / 2;
  check(positions.shape[0] == n && head_dim % 2 == 0 && inv_freq.shape[0] == half, "rope: shapes ",
        x.shape_text(), ", ", positions.shape_text(), ", ", inv_freq.shape_text(), " disagree");
  const int32_t* pos_data = positions.as<int32_t>();
  const float* freq = inv_freq.as<float>();
  float* x_data = x.as<float>();
  const int64_t row = heads * head_dim;
  for_each_block(n, rows_per_block(row), row + half * kExpCost, [&](int64_t begin, int64_t end) {
    std::vector<float> cos_row(static_cast<size_t>(half)), sin_row(static_cast<size_t>(half));
    for (int64_t i = begin; i < end; ++i) {
      // Angles in f32, as transformers computes them.
      const float pos = static_cast<float>(pos_data[i]);
      for (int64_t j = 0; j < half; ++j) {
        const float angle = pos * freq[j];
        cos_row[static_cast<size_t>(j)] = std::cos(angle);
        sin_row[static_cast<size_t>(j)] = std::sin(angle);
      }
      for (int64_t h = 0; h < heads; ++h) {
        float* v = x_data + (i * heads + h) * head_dim;
        for (int64_t j = 0; j < half; ++j) {
          const float a = v[j], b = v[j + half];
          const float c = cos_row[static_cast<size_t>(j)], s = sin_row[static_cast<size_t>(j)];
          v[j] = a * c - b * s;
          v[j + half] = b * c + a * s;
        }
      }
    }
  });
}

void add(const Tensor& a, const Tensor& b, const Tensor& out) {
  check(a.dtype == DType::f32 && b.dtype == DType::f32 && out.dtype == DType::f32 &&
            a.numel() == b.numel() && a.numel() == out.numel(),
        "add: shapes ", a.shape_text(), ", ", b.shape_text(), ", ", out.shape_text(), " disagree");
  const float* a_data = a.as<float>();
  const float* b_data = b.as<float>();
  float* out_data = out.as<float>();
  for_each_block(a.numel(), kBlockElements, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out_data[i] = a_data[i] + b_data[i];
  });
}

void mul_rows(const Tensor& x, const Tensor& scale) {
  expect(x, DType::f32, 2, "mul_rows x");
  expect(scale, DType::f32, 1, "mul_rows scale");
  check(scale.shape[0] == x.shape[0], "mul_rows: ", scale.shape_text(), " scales for ",
        x.shape_text());
  const int64_t dim = x.shape[1];
  float* x_data = x.as<float>();
  const float* scale_data = scale.as<float>();
  for_each_block(x.shape[0], rows_per_block(dim), dim, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      for (int64_t j = 0; j < dim; ++j) x_data[i * dim + j] *= scale_data[i];
  });
}

void silu_mul(const Tensor& gate, const Tensor& up, const Tensor& out) {
  check(gate.dtype == DType::f32 && up.dtype == DType::f32 && out.dtype == DType::f32 &&
            gate.numel() == up.numel() && gate.numel() == out.numel(),
        "silu_mul: shapes ", gate.shape_text(), ", ", up.shape_text(), ", ", out.shape_text(),
        " disagree");
  const float* gate_data = gate.as<float>();
  const float* up_data = up.as<float>();
  float* out_data = out.as<float>();
  for_each_block(gate.numel(), kBlockElements, kExpCost, [&](int64_t begin, int64_t end) {
    silu_mul_range(gate_data, up_data, out_data, begin, end);
  });
}

void sigmoid(const Tensor& x) {
  check(x.dtype == DType::f32, "sigmoid: expected f32 (got ", x.shape_text(), ")");
  float* data = x.as<float>();
  for_each_block(x.numel(), kBlockElements, kExpCost, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) data[i] = 1.0f / (1.0f + std::exp(-data[i]));
  });
}

void fill(const Tensor& x, float value) {
  check(x.dtype == DType::f32 && x.is_contiguous(), "fill: expected a contiguous f32 tensor (got ",
        x.shape_text(), ")");
  std::fill_n(x.as<float>(), x.numel(), value);
}

}  // namespace hive::cpu
