#pragma once
// Reading tokenizer.json / tokenizer_config.json fields with errors that name
// the file and the field: `tokenizer.json: model.merges[12]: expected "a b"
// or ["a","b"] (got 5)`. A path is "<file>: <dotted field>".
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace hive::tokenizer {

using Json = nlohmann::json;

std::string child_path(const std::string& path, std::string_view key);
std::string index_path(const std::string& path, std::size_t index);

// The value, shortened, for "(got ...)".
std::string describe(const Json& value);

void expect_object(const Json& value, const std::string& path);
void expect_array(const Json& value, const std::string& path);

// A field that must be present and not null.
const Json& required(const Json& object, std::string_view key, const std::string& path);

std::string string_field(const Json& object, std::string_view key, const std::string& path);
// Missing or null gives the fallback.
std::optional<std::string> optional_string(const Json& object, std::string_view key,
                                           const std::string& path);
bool bool_field(const Json& object, std::string_view key, const std::string& path, bool fallback);
int64_t int_field(const Json& object, std::string_view key, const std::string& path);

// A one-character string (Metaspace's replacement, Strip's content).
char32_t char_field(const Json& object, std::string_view key, const std::string& path);

// The "type" of a component: `where` is the component's path.
std::string component_type(const Json& component, const std::string& path);

// The error for a component type Hive does not implement.
[[noreturn]] void unsupported_component(const std::string& kind, const std::string& type,
                                        const std::string& path, std::string_view supported);

}  // namespace hive::tokenizer
