#pragma once
// GGUF metadata values (gguf_file.hpp reads them):
//   value  = a scalar, little-endian, of the size its type says
//   string = [u64 length][length bytes of UTF-8, no terminator]
//   array  = [u32 element type][u64 count][count elements, packed]
// An array of numbers or bools stays in the file's mapping (its elements are
// packed there); strings and arrays of arrays are copied out.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace hive {

// The type ids of the format; 9 is array.
enum class GgufValueType : uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};

// "u32", "string", ...; "type 13" for an id outside the format.
std::string gguf_value_type_name(GgufValueType type);

// Bytes of one scalar of `type` in the file; 0 for string and array.
size_t gguf_scalar_size(GgufValueType type);

struct GgufValue {
  GgufValueType type = GgufValueType::u8;
  uint64_t scalar_bits = 0;  // a number or bool: its bytes, zero-extended
  std::string text;          // a string
  // An array: its element type and length, and, by element type, where the
  // elements are.
  GgufValueType element_type = GgufValueType::u8;
  uint64_t count = 0;
  const char* packed = nullptr;      // numbers or bools, in the mapping
  std::vector<std::string> strings;  // strings
  std::vector<GgufValue> arrays;     // arrays
};

// The value type that holds C++ type T: uint8_t .. double, bool, std::string.
template <class T>
constexpr GgufValueType gguf_type_of() {
  if constexpr (std::is_same_v<T, uint8_t>)
    return GgufValueType::u8;
  else if constexpr (std::is_same_v<T, int8_t>)
    return GgufValueType::i8;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return GgufValueType::u16;
  else if constexpr (std::is_same_v<T, int16_t>)
    return GgufValueType::i16;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return GgufValueType::u32;
  else if constexpr (std::is_same_v<T, int32_t>)
    return GgufValueType::i32;
  else if constexpr (std::is_same_v<T, float>)
    return GgufValueType::f32;
  else if constexpr (std::is_same_v<T, bool>)
    return GgufValueType::boolean;
  else if constexpr (std::is_same_v<T, std::string>)
    return GgufValueType::string;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return GgufValueType::u64;
  else if constexpr (std::is_same_v<T, int64_t>)
    return GgufValueType::i64;
  else if constexpr (std::is_same_v<T, double>)
    return GgufValueType::f64;
  else
    static_assert(sizeof(T) == 0, "no GGUF value type holds T");
}

// The number or bool in `bytes` (little-endian, as the file stores it) as T.
template <class T>
T gguf_decode(const void* bytes) {
  if constexpr (std::is_same_v<T, bool>) {
    return *static_cast<const uint8_t*>(bytes) != 0;
  } else {
    T value;
    std::memcpy(&value, bytes, sizeof(T));  // little-endian on every target we build for
    return value;
  }
}

// The scalar `value` as T; `value.type` must be gguf_type_of<T>().
template <class T>
T gguf_scalar_as(const GgufValue& value) {
  if constexpr (std::is_same_v<T, std::string>)
    return value.text;
  else
    return gguf_decode<T>(&value.scalar_bits);
}

}  // namespace hive
