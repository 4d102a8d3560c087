#pragma once
// Binds a call's positional and keyword arguments to named parameters the way
// Python does, for filters, tests, methods and globals:
//   BoundArgs args("trim", call, {"chars"});  args.string_or(0, "")
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/text/jinja/value.hpp"

namespace hive::chat_template {

class BoundArgs {
 public:
  BoundArgs(std::string_view function, const CallArgs& call,
            std::initializer_list<std::string_view> parameters);

  // The argument bound to parameter i, or nullptr when the caller left it out.
  const Value* get(size_t i) const { return present_[i] ? &values_[i] : nullptr; }
  bool has(size_t i) const { return present_[i]; }
  // Python truthiness of the argument, or the fallback when absent.
  bool flag_or(size_t i, bool fallback) const;
  int64_t int_or(size_t i, int64_t fallback) const;
  std::string string_or(size_t i, std::string fallback) const;
  // None and absent both read as "not given", as in Python's `x=None` defaults.
  std::optional<std::string> optional_string(size_t i) const;
  std::optional<int64_t> optional_int(size_t i) const;

 private:
  std::string function_;
  std::vector<std::string> parameters_;
  std::vector<Value> values_;
  std::vector<bool> present_;
};

// For functions that take no arguments at all.
void expect_no_arguments(std::string_view function, const CallArgs& call);

}  // namespace hive::chat_template
