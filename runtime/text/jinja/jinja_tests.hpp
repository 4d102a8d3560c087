#pragma once
// jinja2's tests, the right-hand side of `x is defined`, `x is not none`,
// `x is string`, `n is divisibleby 3`. Named jinja_tests to keep them apart
// from unit tests.
#include <string_view>

#include "runtime/text/jinja/value.hpp"

namespace hive::chat_template {

using TestFunction = bool (*)(const Value& value, const CallArgs& args);

// nullptr when Hive does not implement a test of that name.
TestFunction find_test(std::string_view name);
bool is_jinja_builtin_test(std::string_view name);

}  // namespace hive::chat_template
