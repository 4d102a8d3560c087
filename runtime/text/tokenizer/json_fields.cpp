#include "runtime/text/tokenizer/json_fields.hpp"

#include "base/error.hpp"
#include "runtime/text/utf8.hpp"

namespace hive::tokenizer {

std::string child_path(const std::string& path, std::string_view key) {
  const bool at_file = !path.empty() && path.back() == ':';
  return str_cat(path, at_file ? " " : ".", key);
}

std::string index_path(const std::string& path, std::size_t index) {
  return str_cat(path, "[", index, "]");
}

std::string describe(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  constexpr std::size_t kMax = 60;
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  return text;
}

void expect_object(const Json& value, const std::string& path) {
  if (!(value.is_object())) fail(path, ": expected an object (got ", describe(value), ")");
}

void expect_array(const Json& value, const std::string& path) {
  if (!(value.is_array())) fail(path, ": expected an array (got ", describe(value), ")");
}

const Json& required(const Json& object, std::string_view key, const std::string& path) {
  expect_object(object, path);
  const auto it = object.find(key);
  if (!(it != object.end() && !it->is_null())) fail(child_path(path, key), ": missing");
  return *it;
}

std::string string_field(const Json& object, std::string_view key, const std::string& path) {
  const Json& value = required(object, key, path);
  if (!(value.is_string()))
    fail(child_path(path, key), ": expected a string (got ", describe(value), ")");
  return value.get<std::string>();
}

std::optional<std::string> optional_string(const Json& object, std::string_view key,
                                           const std::string& path) {
  expect_object(object, path);
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::nullopt;
  if (!(it->is_string()))
    fail(child_path(path, key), ": expected a string (got ", describe(*it), ")");
  return it->get<std::string>();
}

bool bool_field(const Json& object, std::string_view key, const std::string& path, bool fallback) {
  expect_object(object, path);
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  if (!(it->is_boolean()))
    fail(child_path(path, key), ": expected true or false (got ", describe(*it), ")");
  return it->get<bool>();
}

int64_t int_field(const Json& object, std::string_view key, const std::string& path) {
  const Json& value = required(object, key, path);
  if (!(value.is_number_integer()))
    fail(child_path(path, key), ": expected an integer (got ", describe(value), ")");
  return value.get<int64_t>();
}

char32_t char_field(const Json& object, std::string_view key, const std::string& path) {
  const std::string text = string_field(object, key, path);
  if (!(utf8::is_valid(text) && utf8::length(text) == 1))
    fail(child_path(path, key), ": expected a single character (got \"", text, "\")");
  std::size_t pos = 0;
  return utf8::next_code_point(text, pos);
}

std::string component_type(const Json& component, const std::string& path) {
  return string_field(component, "type", path);
}

void unsupported_component(const std::string& kind, const std::string& type,
                           const std::string& path, std::string_view supported) {
  fail(path, ": unsupported ", kind, " type \"", type, "\" (supported: ", supported, ")");
}

}  // namespace hive::tokenizer
