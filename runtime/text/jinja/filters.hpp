#pragma once
// jinja2's built-in filters that chat templates use, with transformers'
// `tojson` (json.dumps with ensure_ascii=False, no HTML escaping, keys in
// insertion order). A built-in filter left out here is reported as
// unsupported when the template loads, not skipped.
#include <string_view>

#include "runtime/text/jinja/value.hpp"

namespace hive::chat_template {

using FilterFunction = Value (*)(const Value& input, const CallArgs& args);

// nullptr when Hive does not implement a filter of that name.
FilterFunction find_filter(std::string_view name);
// Whether jinja2 has a built-in filter of that name (to tell "unsupported"
// from "unknown" in errors).
bool is_jinja_builtin_filter(std::string_view name);

}  // namespace hive::chat_template
