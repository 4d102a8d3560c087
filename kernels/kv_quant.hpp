#pragma once
// The rows of a quantized KV cache (`--kv-cache-dtype int8 | fp8`, DType i8
// or f8_e4m3). A cached row is one token's K (or V) of one KV head; a
// quantized row is its head_dim one-byte codes followed by the row's f32
// scale, so the pool's last dimension is head_dim + 4 elements:
//
//   [ c0 c1 ... c(head_dim-1) | scale (4 bytes, f32) ]
//   value d = decode(c_d) * scale
//   i8:      decode(c) = c as a signed byte,  scale = absmax / 127
//   f8_e4m3: decode(c) = the e4m3 value,      scale = absmax / 448
//
// The scale lives in the row it scales, so whatever moves a block (copy-on-
// write, swap to host, prefix caching's sharing) moves its scales with it
// (docs/architecture.md, "A quantized KV cache").
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/dtype.hpp"

namespace hive {

inline constexpr int64_t kKVScaleBytes = 4;  // one f32 per row

constexpr bool is_kv_quantized(DType dtype) {
  return dtype == DType::i8 || dtype == DType::f8_e4m3;
}

// The dtypes a KV cache may store.
constexpr bool is_kv_cache_dtype(DType dtype) {
  return dtype == DType::f32 || dtype == DType::bf16 || is_kv_quantized(dtype);
}

// Elements (of `dtype`) of one cached row of head_dim values.
constexpr int64_t kv_row_elems(DType dtype, int64_t head_dim) {
  return is_kv_quantized(dtype) ? head_dim + kKVScaleBytes : head_dim;
}

// The largest code magnitude: absmax maps to it.
constexpr float kv_code_max(DType dtype) {
  return dtype == DType::i8 ? 127.0f : 448.0f;
}

// Every e4m3 byte's value, read once per element where f8_e4m3_to_f32's
// branches would sit in the attention's inner loop.
inline const std::array<float, 256> kF8E4M3Values = [] {
  std::array<float, 256> values{};
  for (int b = 0; b < 256; ++b) values[static_cast<size_t>(b)] = f8_e4m3_to_f32(static_cast<uint8_t>(b));
  return values;
}();

inline float kv_row_scale(const uint8_t* row, int64_t head_dim) {
  float scale;
  std::memcpy(&scale, row + head_dim, sizeof scale);
  return scale;
}

// The code's value before scaling.
inline float decode_kv(uint8_t code, DType dtype) {
  return dtype == DType::i8 ? static_cast<float>(static_cast<int8_t>(code))
                            : kF8E4M3Values[code];
}

// x[0..head_dim) as a quantized row: symmetric, scale = absmax / code max;
// i8 codes round to nearest even, e4m3 codes as torch's float8_e4m3fn
// rounds (saturating). An all-zero row has scale 0 and zero codes; a NaN
// is code 0 in i8, which has no NaN.
inline void quantize_kv_row(const float* x, int64_t head_dim, DType dtype, uint8_t* row) {
  float absmax = 0.0f;
  for (int64_t d = 0; d < head_dim; ++d) absmax = std::max(absmax, std::fabs(x[d]));
  const float scale = absmax / kv_code_max(dtype);
  for (int64_t d = 0; d < head_dim; ++d) {
    const float scaled = scale > 0.0f ? x[d] / scale : 0.0f;
    if (dtype == DType::f8_e4m3) {
      row[d] = f32_to_f8_e4m3(scaled);
      continue;
    }
    const float code = std::isnan(scaled) ? 0.0f : std::clamp(std::nearbyint(scaled), -127.0f, 127.0f);
    row[d] = static_cast<uint8_t>(static_cast<int8_t>(code));
  }
  std::memcpy(row + head_dim, &scale, sizeof scale);
}

// A quantized row's head_dim values: decode(code) * scale, each one f32
// product, the values attention reads.
inline void dequantize_kv_row(const uint8_t* row, int64_t head_dim, DType dtype, float* out) {
  const float scale = kv_row_scale(row, head_dim);
  if (dtype == DType::i8)
    for (int64_t d = 0; d < head_dim; ++d)
      out[d] = static_cast<float>(static_cast<int8_t>(row[d])) * scale;
  else
    for (int64_t d = 0; d < head_dim; ++d) out[d] = kF8E4M3Values[row[d]] * scale;
}

}  // namespace hive
