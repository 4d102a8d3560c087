#pragma once
// JSON in and out. Inputs (messages, tools, kwargs) arrive as ordered JSON so
// that key order survives, as it does in Python. Output is Python's
// json.dumps, which transformers installs as the `tojson` filter (with
// ensure_ascii=False and no HTML escaping, unlike jinja2's own tojson).
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/text/jinja/value.hpp"

namespace hive::chat_template {

Value from_json(const nlohmann::ordered_json& json);

struct JsonDumpOptions {
  std::optional<std::string> indent;  // none: one line; else the text of one level
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};

std::string to_json(const Value& value, const JsonDumpOptions& options);

}  // namespace hive::chat_template
