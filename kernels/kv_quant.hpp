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
// (docs/design/kernels.md, "Quantized KV rows").
#include <algorithm>
#include <bit>
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

// An e4m3 code's value in shifts and one multiply, without branches or a
// table, so a row's loop vectorizes on any ISA: the code's exponent and
// mantissa moved under an f32's (sign to bit 31) make the value times
// 2^-120 (e4m3 subnormals become f32 subnormals), so times 2^120 (exact)
// it is f8_e4m3_to_f32's value. The one code that differs is NaN (0x7f,
// 0xff), which quantize_kv_row never writes: a row holding a NaN gets a
// NaN scale instead.
inline __attribute__((always_inline)) float decode_e4m3(uint8_t code) {
  const uint32_t bits = uint32_t{code & 0x80u} << 24 | uint32_t{code & 0x7fu} << 20;
  return std::bit_cast<float>(bits) * 0x1p120f;
}

inline float kv_row_scale(const uint8_t* row, int64_t head_dim) {
  float scale;
  std::memcpy(&scale, row + head_dim, sizeof scale);
  return scale;
}

// The code's value before scaling.
inline float decode_kv(uint8_t code, DType dtype) {
  return dtype == DType::i8 ? static_cast<float>(static_cast<int8_t>(code)) : decode_e4m3(code);
}

// x[0..head_dim) as a quantized row: symmetric, scale = absmax / code max;
// i8 codes round to nearest even, e4m3 codes as torch's float8_e4m3fn
// rounds (saturating). An all-zero row has scale 0 and zero codes. A row
// holding a NaN or an infinity gets a NaN scale (and zero codes), so every
// value read back is NaN and attention shows it, as from a bf16 cache.
inline void quantize_kv_row(const float* x, int64_t head_dim, DType dtype, uint8_t* row) {
  float absmax = 0.0f;
  bool finite = true;
  for (int64_t d = 0; d < head_dim; ++d) {
    absmax = std::max(absmax, std::fabs(x[d]));
    finite &= std::isfinite(x[d]);
  }
  if (!finite) {
    std::fill(row, row + head_dim, uint8_t{0});
    const float scale = NAN;
    std::memcpy(row + head_dim, &scale, sizeof scale);
    return;
  }
  const float scale = absmax / kv_code_max(dtype);
  for (int64_t d = 0; d < head_dim; ++d) {
    const float scaled = scale > 0.0f ? x[d] / scale : 0.0f;
    if (dtype == DType::f8_e4m3) {
      row[d] = f32_to_f8_e4m3(scaled);
      continue;
    }
    const float code = std::clamp(std::nearbyint(scaled), -127.0f, 127.0f);
    row[d] = static_cast<uint8_t>(static_cast<int8_t>(code));
  }
  std::memcpy(row + head_dim, &scale, sizeof scale);
}

// A quantized row's head_dim values: decode(code) * scale, each one f32
// product, the values attention reads. Inlined into the attention kernel's
// per-machine clones, so its loop is built for each one's ISA.
inline __attribute__((always_inline)) void dequantize_kv_row(const uint8_t* row, int64_t head_dim,
                                                             DType dtype, float* out) {
  const float scale = kv_row_scale(row, head_dim);
  if (dtype == DType::i8)
    for (int64_t d = 0; d < head_dim; ++d)
      out[d] = static_cast<float>(static_cast<int8_t>(row[d])) * scale;
  else
    for (int64_t d = 0; d < head_dim; ++d) out[d] = decode_e4m3(row[d]) * scale;
}

}  // namespace hive
