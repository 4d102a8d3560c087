#include "runtime/loader/gguf_metadata.hpp"

#include <limits>

#include "base/error.hpp"

namespace hive {

namespace {

bool is_integer_type(GgufValueType type) {
  switch (type) {
    case GgufValueType::u8:
    case GgufValueType::i8:
    case GgufValueType::u16:
    case GgufValueType::i16:
    case GgufValueType::u32:
    case GgufValueType::i32:
    case GgufValueType::u64:
    case GgufValueType::i64:
      return true;
    default:
      return false;
  }
}

int64_t integer_value(const GgufFile& file, std::string_view key, const GgufValue& value) {
  switch (value.type) {
    case GgufValueType::u8:
      return gguf_scalar_as<uint8_t>(value);
    case GgufValueType::i8:
      return gguf_scalar_as<int8_t>(value);
    case GgufValueType::u16:
      return gguf_scalar_as<uint16_t>(value);
    case GgufValueType::i16:
      return gguf_scalar_as<int16_t>(value);
    case GgufValueType::u32:
      return gguf_scalar_as<uint32_t>(value);
    case GgufValueType::i32:
      return gguf_scalar_as<int32_t>(value);
    case GgufValueType::i64:
      return gguf_scalar_as<int64_t>(value);
    default: {
      const auto u = gguf_scalar_as<uint64_t>(value);
      check(u <= uint64_t{std::numeric_limits<int64_t>::max()}, file.path().string(),
            ": metadata key '", key, "' is ", u, ", past int64");
      return static_cast<int64_t>(u);
    }
  }
}

}  // namespace

std::optional<int64_t> gguf_integer(const GgufFile& file, std::string_view key) {
  const GgufValue* value = file.find(key);
  if (!value) return std::nullopt;
  check(is_integer_type(value->type), file.path().string(), ": metadata key '", key, "' has type ",
        gguf_value_type_name(value->type), ", expected an integer");
  return integer_value(file, key, *value);
}

int64_t gguf_required_integer(const GgufFile& file, std::string_view key) {
  const auto value = gguf_integer(file, key);
  check(value.has_value(), file.path().string(), ": metadata key '", key, "' is missing");
  return *value;
}

std::optional<double> gguf_number(const GgufFile& file, std::string_view key) {
  const GgufValue* value = file.find(key);
  if (!value) return std::nullopt;
  if (value->type == GgufValueType::f32) return gguf_scalar_as<float>(*value);
  if (value->type == GgufValueType::f64) return gguf_scalar_as<double>(*value);
  check(is_integer_type(value->type), file.path().string(), ": metadata key '", key, "' has type ",
        gguf_value_type_name(value->type), ", expected a number");
  return static_cast<double>(integer_value(file, key, *value));
}

double gguf_required_number(const GgufFile& file, std::string_view key) {
  const auto value = gguf_number(file, key);
  check(value.has_value(), file.path().string(), ": metadata key '", key, "' is missing");
  return *value;
}

std::optional<std::string> gguf_string(const GgufFile& file, std::string_view key) {
  if (!file.find(key)) return std::nullopt;
  return file.get<std::string>(key);
}

std::optional<bool> gguf_bool(const GgufFile& file, std::string_view key) {
  if (!file.find(key)) return std::nullopt;
  return file.get<bool>(key);
}

}  // namespace hive
