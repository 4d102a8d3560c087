#pragma once
// Element types of tensors and the scalar conversions between them. Besides
// the plain types (i8 and f8_e4m3 are one byte each: a quantized KV cache's
// elements and FP8 checkpoints' weights, each with scales kept beside it by
// its owner), a tensor may hold ggml's quantized blocks (q8_0 .. q6_k, q5_0,
// q5_1, as GGUF files store them, kernels/quant/blocks.hpp): its last dimension
// is then a whole number of blocks of dtype_block_size elements, each
// dtype_block_bytes long, and only the ops that say so take it (the CPU
// matmul, the embedding).
#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace hive {

// New values go last: a DType crosses process boundaries as its number.
enum class DType : uint8_t {
  f32, f16, bf16, i32, i64, q8_0, q4_0, q4_k, q5_k, q6_k, i8, f8_e4m3, q5_0, q5_1
};

constexpr bool is_quantized(DType t) {
  return t == DType::q8_0 || t == DType::q4_0 || t == DType::q4_k || t == DType::q5_k ||
         t == DType::q6_k || t == DType::q5_0 || t == DType::q5_1;
}

// The side of an FP8 checkpoint's square scale blocks (weight_block_size
// [128, 128], DeepSeek-V3's): an f8_e4m3 weight's Tensor::block_scales.
inline constexpr int64_t kFp8Block = 128;

// Elements per block: 1 for the plain types.
constexpr int64_t dtype_block_size(DType t) {
  switch (t) {
    case DType::q8_0:
    case DType::q4_0:
    case DType::q5_0:
    case DType::q5_1:
      return 32;
    case DType::q4_k:
    case DType::q5_k:
    case DType::q6_k:
      return 256;
    default:
      return 1;
  }
}

// Bytes per element of a plain type; 0 for a block type, which has no
// per-element size (dtype_bytes counts its bytes).
constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::f16:
      return 2;
    case DType::bf16:
      return 2;
    case DType::i32:
      return 4;
    case DType::i64:
      return 8;
    case DType::i8:
    case DType::f8_e4m3:
      return 1;
    default:
      return 0;
  }
}

// Bytes per block: dtype_size for the plain types.
constexpr int64_t dtype_block_bytes(DType t) {
  switch (t) {
    case DType::q8_0:
      return 34;
    case DType::q4_0:
      return 18;
    case DType::q4_k:
      return 144;
    case DType::q5_k:
      return 176;
    case DType::q6_k:
      return 210;
    case DType::q5_0:
      return 22;
    case DType::q5_1:
      return 24;
    default:
      return static_cast<int64_t>(dtype_size(t));
  }
}

// Bytes of `count` elements, a whole number of blocks for a block type.
constexpr int64_t dtype_bytes(DType t, int64_t count) {
  return count / dtype_block_size(t) * dtype_block_bytes(t);
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::q8_0:
      return "q8_0";
    case DType::q4_0:
      return "q4_0";
    case DType::q4_k:
      return "q4_k";
    case DType::q5_k:
      return "q5_k";
    case DType::q6_k:
      return "q6_k";
    case DType::i8:
      return "i8";
    case DType::f8_e4m3:
      return "f8_e4m3";
    case DType::q5_0:
      return "q5_0";
    case DType::q5_1:
      return "q5_1";
  }
  return "?";
}

constexpr bool is_float(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16;
}

// Accepts our names ("bf16") and the usual spellings ("bfloat16", "BF16");
// not the block types, which only GGUF files give a tensor.
std::optional<DType> parse_dtype(std::string_view name);

inline float bf16_to_f32(uint16_t bits) {
  return std::bit_cast<float>(uint32_t{bits} << 16);
}

// Round to nearest even, NaN stays NaN (as torch does).
inline uint16_t f32_to_bf16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

// FP8 e4m3 as torch's float8_e4m3fn and safetensors' F8_E4M3: bias 7, no
// infinities, 0x7f/0xff the only NaNs, largest finite 448.
inline float f8_e4m3_to_f32(uint8_t bits) {
  const uint32_t sign = uint32_t{bits & 0x80u} << 24;
  const uint32_t exponent = (bits >> 3) & 0xfu;
  const uint32_t mantissa = bits & 0x7u;
  if (exponent == 0xf && mantissa == 0x7) return std::bit_cast<float>(sign | 0x7fc00000u);
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-9, exact in float
    const float magnitude = static_cast<float>(mantissa) * 0x1p-9f;
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | (exponent + 120) << 23 | mantissa << 20);
}

// Round to nearest even, and as torch does, saturate: a magnitude past 448
// (infinity too) becomes 448, NaN stays NaN.
inline uint8_t f32_to_f8_e4m3(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  bits &= 0x7fffffffu;
  if (bits > 0x7f800000u) return sign | 0x7fu;  // NaN
  if (bits >= 0x43e00000u) return sign | 0x7eu;  // >= 448
  if (bits < 0x3c800000u) {
    // Below 2^-6, a subnormal: adding 2^14 makes the float's last bit worth
    // 2^-9, the subnormal's, so the float addition does the rounding.
    const float aligned = std::bit_cast<float>(bits) + 16384.0f;
    return sign | static_cast<uint8_t>(std::bit_cast<uint32_t>(aligned) - 0x46800000u);
  }
  const uint32_t odd = (bits >> 20) & 1u;
  bits += 0xc407ffffu + odd;  // rebias the exponent (-120 << 23) and round half to even
  return sign | static_cast<uint8_t>(bits >> 20);
}

// Row r of an f8_e4m3 weight [rows, k] as f32 (an FP8 checkpoint's
// dequantized weight): each value times its block's scale in one f32
// multiplication, which every FP8 matmul path computes the same way.
// scale_row = block_scales + r / kFp8Block * ceil(k / kFp8Block).
inline void f8_e4m3_row_to_f32(const uint8_t* row, const float* scale_row, int64_t k, float* out) {
  for (int64_t c = 0; c < k; ++c) out[c] = f8_e4m3_to_f32(row[c]) * scale_row[c / kFp8Block];
}

#if defined(__clang__) && __clang_major__ < 15
// Clang 14 (Debian's, which builds the fuzz targets) has no _Float16 on
// x86-64: the same IEEE conversions in integer arithmetic, round to nearest
// even, NaN stays NaN with its payload's top bits, as the hardware does.
inline float f16_to_f32(uint16_t bits) {
  const uint32_t sign = uint32_t{bits & 0x8000u} << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31)
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa ? 0x400000u | mantissa << 13 : 0));
  return std::bit_cast<float>(sign | (exponent + 112) << 23 | mantissa << 13);
}

inline uint16_t f32_to_f16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  bits &= 0x7fffffffu;
  if (bits > 0x7f800000u) return sign | 0x7e00u | ((bits >> 13) & 0x3ffu);  // NaN
  if (bits >= 0x47800000u) return sign | 0x7c00u;  // >= 65536: infinity
  if (bits < 0x38800000u) {
    // Below 2^-14, a subnormal: adding 0.5 aligns the mantissa's last kept
    // bit with the float's, so the float addition does the rounding.
    const float aligned = std::bit_cast<float>(bits) + 0.5f;
    return sign | static_cast<uint16_t>(std::bit_cast<uint32_t>(aligned) - 0x3f000000u);
  }
  const uint32_t odd = (bits >> 13) & 1u;
  bits += 0xc8000fffu + odd;  // rebias the exponent (-112 << 23) and round half to even
  return sign | static_cast<uint16_t>(bits >> 13);
}
#else
inline float f16_to_f32(uint16_t bits) {
  return static_cast<float>(std::bit_cast<_Float16>(bits));
}

inline uint16_t f32_to_f16(float value) {
  return std::bit_cast<uint16_t>(static_cast<_Float16>(value));
}
#endif

}  // namespace hive
