#pragma once
// Element types of tensors and the scalar conversions between them.
#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace hive {

enum class DType : uint8_t { f32, f16, bf16, i32, i64 };

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
  }
  return 0;
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
  }
  return "?";
}

constexpr bool is_float(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16;
}

// Accepts our names ("bf16") and the usual spellings ("bfloat16", "BF16").
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

inline float f16_to_f32(uint16_t bits) {
  return static_cast<float>(std::bit_cast<_Float16>(bits));
}

inline uint16_t f32_to_f16(float value) {
  return std::bit_cast<uint16_t>(static_cast<_Float16>(value));
}

}  // namespace hive
