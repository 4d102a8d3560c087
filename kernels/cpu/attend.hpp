#pragma once
// attend: one query row's softmax attention, shared by the contiguous and the
// paged kernel so that both compute the same bits.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/dtype.hpp"
#include "kernels/kv_quant.hpp"

namespace hive::cpu {

// out = sum_j softmax_j(q . k_j * scale) v_j over the positions j the query
// at position `last` sees (all before it, or the last `sliding_window`), in
// f32 with the maximum subtracted. offset(j): where position j's rows start
// in k and v, which hold f32 or bf16 (uint16_t bits), widened exactly as
// read. scores: scratch of at least last + 1 floats.
inline float widen(float x) {
  return x;
}
inline float widen(uint16_t bf16_bits) {
  return bf16_to_f32(bf16_bits);
}

template <class T, class Offset>
void attend(const float* q, const T* k, const T* v, int64_t last, int64_t sliding_window,
            int64_t head_dim, float scale, const Offset& offset, std::vector<float>& scores,
            float* out) {
  const int64_t first = sliding_window > 0 ? std::max<int64_t>(0, last - sliding_window + 1) : 0;
  float max_score = -INFINITY;
  for (int64_t j = first; j <= last; ++j) {
    const T* kj = k + offset(j);
    float dot = 0.0f;
    for (int64_t d = 0; d < head_dim; ++d) dot += q[d] * widen(kj[d]);
    scores[static_cast<size_t>(j)] = dot * scale;
    max_score = std::max(max_score, scores[static_cast<size_t>(j)]);
  }
  float total = 0.0f;
  for (int64_t j = first; j <= last; ++j) {
    float& s = scores[static_cast<size_t>(j)];
    s = std::exp(s - max_score);
    total += s;
  }
  std::fill(out, out + head_dim, 0.0f);
  for (int64_t j = first; j <= last; ++j) {
    const float weight = scores[static_cast<size_t>(j)] / total;
    const T* vj = v + offset(j);
    for (int64_t d = 0; d < head_dim; ++d) out[d] += weight * widen(vj[d]);
  }
}

// attend over a quantized cache (kv_quant.hpp): k and v hold rows of codes
// and their scale, each element read as decode(code) * scale, one f32
// product, and from there the arithmetic of attend on those f32 values: the
// same bits as attend over an f32 cache of the dequantized rows.
template <class Offset>
void attend_quantized(const float* q, const uint8_t* k, const uint8_t* v, DType dtype, int64_t last,
                      int64_t sliding_window, int64_t head_dim, float scale, const Offset& offset,
                      std::vector<float>& scores, float* out) {
  const int64_t first = sliding_window > 0 ? std::max<int64_t>(0, last - sliding_window + 1) : 0;
  float max_score = -INFINITY;
  for (int64_t j = first; j <= last; ++j) {
    const uint8_t* kj = k + offset(j);
    const float row_scale = kv_row_scale(kj, head_dim);
    float dot = 0.0f;
    for (int64_t d = 0; d < head_dim; ++d) {
      const float key = decode_kv(kj[d], dtype) * row_scale;
      dot += q[d] * key;
    }
    scores[static_cast<size_t>(j)] = dot * scale;
    max_score = std::max(max_score, scores[static_cast<size_t>(j)]);
  }
  float total = 0.0f;
  for (int64_t j = first; j <= last; ++j) {
    float& s = scores[static_cast<size_t>(j)];
    s = std::exp(s - max_score);
    total += s;
  }
  std::fill(out, out + head_dim, 0.0f);
  for (int64_t j = first; j <= last; ++j) {
    const float weight = scores[static_cast<size_t>(j)] / total;
    const uint8_t* vj = v + offset(j);
    const float row_scale = kv_row_scale(vj, head_dim);
    for (int64_t d = 0; d < head_dim; ++d) {
      const float value = decode_kv(vj[d], dtype) * row_scale;
      out[d] += weight * value;
    }
  }
}

}  // namespace hive::cpu
