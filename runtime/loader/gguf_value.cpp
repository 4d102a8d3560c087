#include "runtime/loader/gguf_value.hpp"

#include "base/error.hpp"
#include "runtime/loader/gguf_cursor.hpp"

namespace hive {

namespace {

// Arrays of arrays are legal GGUF but no writer nests deeply; the bound keeps
// a crafted file from recursing the stack away.
constexpr int kMaxArrayDepth = 8;

bool is_scalar(GgufValueType type) {
  return gguf_scalar_size(type) != 0;
}

void check_bool(uint8_t byte, const GgufCursor& cursor, const std::string& what) {
  check(byte <= 1, cursor.file(), ": ", what, ": bool must be 0 or 1 (got ", int{byte},
        ") at offset ", cursor.position() - 1);
}

GgufValue read_array(GgufCursor& cursor, const std::string& what, int depth) {
  check(depth < kMaxArrayDepth, cursor.file(), ": ", what, ": arrays nested deeper than ",
        kMaxArrayDepth);
  GgufValue value;
  value.type = GgufValueType::array;
  value.element_type = static_cast<GgufValueType>(cursor.read<uint32_t>(what, "array type"));
  value.count = cursor.read<uint64_t>(what, "array length");
  const GgufValueType element = value.element_type;
  if (is_scalar(element)) {
    const size_t size = gguf_scalar_size(element);
    cursor.check_count(value.count, size, what, "array elements");
    value.packed = cursor.take(value.count * size, what, "array");
    if (element == GgufValueType::boolean)
      for (uint64_t i = 0; i < value.count; ++i)
        check(static_cast<uint8_t>(value.packed[i]) <= 1, cursor.file(), ": ", what,
              ": bool must be 0 or 1 (got ", int{static_cast<uint8_t>(value.packed[i])},
              ") in element ", i);
  } else if (element == GgufValueType::string) {
    cursor.check_count(value.count, 8, what, "array strings");
    value.strings.reserve(value.count);
    for (uint64_t i = 0; i < value.count; ++i) value.strings.push_back(cursor.read_string(what));
  } else if (element == GgufValueType::array) {
    cursor.check_count(value.count, 12, what, "nested arrays");
    value.arrays.reserve(value.count);
    for (uint64_t i = 0; i < value.count; ++i)
      value.arrays.push_back(read_array(cursor, what, depth + 1));
  } else {
    fail(cursor.file(), ": ", what, ": unknown array element type ",
         static_cast<uint32_t>(element));
  }
  return value;
}

}  // namespace

std::string gguf_value_type_name(GgufValueType type) {
  static constexpr const char* kNames[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                           "bool", "string", "array", "u64", "i64", "f64"};
  const auto id = static_cast<uint32_t>(type);
  return id < std::size(kNames) ? kNames[id] : str_cat("type ", id);
}

size_t gguf_scalar_size(GgufValueType type) {
  switch (type) {
    case GgufValueType::u8:
    case GgufValueType::i8:
    case GgufValueType::boolean:
      return 1;
    case GgufValueType::u16:
    case GgufValueType::i16:
      return 2;
    case GgufValueType::u32:
    case GgufValueType::i32:
    case GgufValueType::f32:
      return 4;
    case GgufValueType::u64:
    case GgufValueType::i64:
    case GgufValueType::f64:
      return 8;
    case GgufValueType::string:
    case GgufValueType::array:
      return 0;
  }
  return 0;
}

GgufValue read_gguf_value(GgufCursor& cursor, GgufValueType type, const std::string& what,
                          int depth) {
  if (type == GgufValueType::array) return read_array(cursor, what, depth);
  GgufValue value;
  value.type = type;
  if (type == GgufValueType::string) {
    value.text = cursor.read_string(what);
  } else if (is_scalar(type)) {
    const size_t size = gguf_scalar_size(type);
    std::memcpy(&value.scalar_bits, cursor.take(size, what, "value"), size);
    if (type == GgufValueType::boolean)
      check_bool(static_cast<uint8_t>(value.scalar_bits), cursor, what);
  } else {
    fail(cursor.file(), ": ", what, ": unknown value type ", static_cast<uint32_t>(type));
  }
  return value;
}

}  // namespace hive
