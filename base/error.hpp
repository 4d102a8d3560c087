#pragma once
// The one error type Hive throws. Messages say what was wrong, with the value
// and what was expected: "config.json: num_key_value_heads must divide
// num_attention_heads (got 3 and 8)".
#include <sstream>
#include <stdexcept>
#include <string>

namespace hive {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Joins the arguments with operator<< into one string.
template <class... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

template <class... Args>
[[noreturn]] void fail(const Args&... args) {
  throw Error(str_cat(args...));
}

template <class... Args>
void check(bool ok, const Args&... args) {
  if (!ok) fail(args...);
}

}  // namespace hive
