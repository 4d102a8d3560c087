#pragma once
// Python str methods that templates call on values (`content.split('</think>')`,
// `role.startswith('tool')`). Lookup returns the method bound to its string;
// a real str method that is not implemented here returns a callable that
// fails with "unsupported str method 'zfill'" rather than misbehaving.
#include <optional>
#include <string>
#include <string_view>

#include "runtime/text/jinja/value.hpp"

namespace hive::chat_template {

std::optional<Value> string_method(const std::string& receiver, std::string_view name);

}  // namespace hive::chat_template
