#include "runtime/text/jinja/call_args.hpp"

#include "base/error.hpp"

namespace hive::chat_template {

BoundArgs::BoundArgs(std::string_view function, const CallArgs& call,
                     std::initializer_list<std::string_view> parameters)
    : function_(function),
      parameters_(parameters.begin(), parameters.end()),
      values_(parameters.size()),
      present_(parameters.size(), false) {
  check(call.positional.size() <= parameters_.size(), "'", function_, "' takes at most ",
        parameters_.size(), " argument(s) (", call.positional.size(), " given)");
  for (size_t i = 0; i < call.positional.size(); ++i) {
    values_[i] = call.positional[i];
    present_[i] = true;
  }
  for (const auto& [name, value] : call.keywords) {
    size_t i = 0;
    while (i < parameters_.size() && parameters_[i] != name) ++i;
    check(i < parameters_.size(), "'", function_, "' got an unexpected keyword argument '", name,
          "'");
    check(!present_[i], "'", function_, "' got multiple values for argument '", name, "'");
    values_[i] = value;
    present_[i] = true;
  }
}

bool BoundArgs::flag_or(size_t i, bool fallback) const {
  return present_[i] ? values_[i].truthy() : fallback;
}

int64_t BoundArgs::int_or(size_t i, int64_t fallback) const {
  return optional_int(i).value_or(fallback);
}

std::string BoundArgs::string_or(size_t i, std::string fallback) const {
  return optional_string(i).value_or(std::move(fallback));
}

std::optional<std::string> BoundArgs::optional_string(size_t i) const {
  if (!present_[i] || values_[i].is_none()) return std::nullopt;
  check(values_[i].is_string(), "'", function_, "': argument '", parameters_[i],
        "' must be a string, not '", values_[i].type_name(), "'");
  return values_[i].as_string();
}

std::optional<int64_t> BoundArgs::optional_int(size_t i) const {
  if (!present_[i] || values_[i].is_none()) return std::nullopt;
  check(values_[i].is_integer(), "'", function_, "': argument '", parameters_[i],
        "' must be an integer, not '", values_[i].type_name(), "'");
  return values_[i].as_int();
}

void expect_no_arguments(std::string_view function, const CallArgs& call) {
  check(call.positional.empty() && call.keywords.empty(), "'", function, "' takes no arguments");
}

}  // namespace hive::chat_template
