#pragma once
// How values print: `{{ x }}` and `~` use Python's str(), which for lists and
// dicts is the repr() of their items ("['a', 1, None]"), and floats print in
// Python's shortest round-trip form ("0.1", "1e-05", "1e+16").
#include <string>

#include "runtime/text/jinja/value.hpp"

namespace hive::chat_template {

std::string to_str(const Value& value);
std::string repr(const Value& value);
std::string float_repr(double d);
std::string string_repr(const std::string& s);

}  // namespace hive::chat_template
