#pragma once
// `obj.name` and `obj[key]` resolved the way jinja2's sandbox resolves them:
// attribute access tries Python attributes first (so `message.items` is the
// dict method) and items second; subscription tries items first and
// attributes second. What is missing becomes an undefined value that names
// it ("'dict object' has no attribute 'tool_calls'"), which only raises when
// it is used. Methods that would mutate a list or dict raise, as the
// immutable sandbox does.
#include <string_view>

#include "runtime/text/jinja/value.hpp"

namespace hive::chat_template {

Value get_attribute(const Value& object, std::string_view name);
Value get_item(const Value& object, const Value& key);
// Python slicing object[start:stop:step]; none stands for an omitted bound.
Value get_slice(const Value& object, const Value& start, const Value& stop, const Value& step);

}  // namespace hive::chat_template
