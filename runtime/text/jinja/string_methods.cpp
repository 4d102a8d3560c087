#include "runtime/text/jinja/string_methods.hpp"

#include <algorithm>
#include <array>
#include <map>

#include "base/error.hpp"
#include "runtime/text/jinja/call_args.hpp"
#include "runtime/text/jinja/python_chars.hpp"
#include "runtime/text/jinja/string_ops.hpp"
#include "runtime/text/jinja/value_ops.hpp"
#include "runtime/text/utf8.hpp"

namespace hive::chat_template {
namespace {

using Method = Value (*)(const std::string& self, const CallArgs& call);

// Every method of Python's str, so a template that uses one we lack fails
// loudly instead of reading it as undefined.
constexpr std::array kPythonStrMethods = {
    "capitalize",   "casefold",    "center",    "count",      "encode",       "endswith",
    "expandtabs",   "find",        "format",    "format_map", "index",        "isalnum",
    "isalpha",      "isascii",     "isdecimal", "isdigit",    "isidentifier", "islower",
    "isnumeric",    "isprintable", "isspace",   "istitle",    "isupper",      "join",
    "ljust",        "lower",       "lstrip",    "maketrans",  "partition",    "removeprefix",
    "removesuffix", "replace",     "rfind",     "rindex",     "rjust",        "rpartition",
    "rsplit",       "rstrip",      "split",     "splitlines", "startswith",   "strip",
    "swapcase",     "title",       "translate", "upper",      "zfill"};

// Python's str.title(): a letter is upper-cased after an uncased character
// and lower-cased after a cased one.
std::string title_string(const std::string& s) {
  std::string out;
  bool previous_cased = false;
  for (size_t pos = 0; pos < s.size();) {
    const char32_t c = utf8::decode(s, pos);
    utf8::append(out, previous_cased ? py::lower_char(c) : py::upper_char(c));
    previous_cased = py::is_upper_char(c) || py::is_lower_char(c);
  }
  return out;
}

// The prefix argument of startswith/endswith: a string or a tuple of them.
std::vector<std::string> affixes(std::string_view method, const Value& argument) {
  if (argument.is_string()) return {argument.as_string()};
  check(argument.kind() == Value::Kind::tuple, method,
        " first arg must be str or a tuple of str, not ", argument.type_name());
  std::vector<std::string> out;
  for (const Value& item : argument.as_list()) {
    check(item.is_string(), "tuple for ", method, " must only contain str, not ", item.type_name());
    out.push_back(item.as_string());
  }
  return out;
}

Value starts_with(const std::string& self, const CallArgs& call) {
  BoundArgs args("startswith", call, {"prefix"});
  check(args.has(0), "startswith() takes exactly one argument (0 given)");
  for (const auto& prefix : affixes("startswith", *args.get(0))) {
    if (self.compare(0, prefix.size(), prefix) == 0) return Value::boolean(true);
  }
  return Value::boolean(false);
}

Value ends_with(const std::string& self, const CallArgs& call) {
  BoundArgs args("endswith", call, {"suffix"});
  check(args.has(0), "endswith() takes exactly one argument (0 given)");
  for (const auto& suffix : affixes("endswith", *args.get(0))) {
    if (self.size() >= suffix.size() &&
        self.compare(self.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return Value::boolean(true);
    }
  }
  return Value::boolean(false);
}

template <bool Left, bool Right>
Value strip_method(const std::string& self, const CallArgs& call) {
  BoundArgs args("strip", call, {"chars"});
  return Value::string(strip_string(self, args.optional_string(0), Left, Right));
}

Value split_method(const std::string& self, const CallArgs& call) {
  BoundArgs args("split", call, {"sep", "maxsplit"});
  return split_string(self, args.optional_string(0), args.int_or(1, -1), /*from_right=*/false);
}

Value rsplit_method(const std::string& self, const CallArgs& call) {
  BoundArgs args("rsplit", call, {"sep", "maxsplit"});
  return split_string(self, args.optional_string(0), args.int_or(1, -1), /*from_right=*/true);
}

Value splitlines_method(const std::string& self, const CallArgs& call) {
  BoundArgs args("splitlines", call, {"keepends"});
  return split_lines(self, args.flag_or(0, false));
}

Value replace_method(const std::string& self, const CallArgs& call) {
  BoundArgs args("replace", call, {"old", "new", "count"});
  check(args.has(0) && args.has(1), "replace() expected at least 2 arguments");
  return Value::string(
      replace_string(self, args.string_or(0, ""), args.string_or(1, ""), args.int_or(2, -1)));
}

Value join_method(const std::string& self, const CallArgs& call) {
  BoundArgs args("join", call, {"iterable"});
  check(args.has(0), "join() takes exactly one argument (0 given)");
  std::string out;
  bool first = true;
  for (const Value& item : iterate(*args.get(0))) {
    check(item.is_string(), "sequence item: expected str instance, ", item.type_name(), " found");
    if (!first) out += self;
    first = false;
    out += item.as_string();
  }
  return Value::string(std::move(out));
}

template <bool Reverse>
Value find_method(const std::string& self, const CallArgs& call) {
  BoundArgs args(Reverse ? "rfind" : "find", call, {"sub"});
  const std::string sub = args.string_or(0, "");
  const size_t at = Reverse ? self.rfind(sub) : self.find(sub);
  if (at == std::string::npos) return Value::integer(-1);
  return Value::integer(static_cast<int64_t>(utf8::length(std::string_view(self).substr(0, at))));
}

Value count_method(const std::string& self, const CallArgs& call) {
  BoundArgs args("count", call, {"sub"});
  const std::string sub = args.string_or(0, "");
  if (sub.empty()) return Value::integer(static_cast<int64_t>(utf8::length(self)) + 1);
  int64_t count = 0;
  for (size_t at = self.find(sub); at != std::string::npos; at = self.find(sub, at + sub.size())) {
    ++count;
  }
  return Value::integer(count);
}

template <bool Prefix>
Value remove_affix(const std::string& self, const CallArgs& call) {
  BoundArgs args(Prefix ? "removeprefix" : "removesuffix", call, {"affix"});
  const std::string affix = args.string_or(0, "");
  if (Prefix && self.compare(0, affix.size(), affix) == 0)
    return Value::string(self.substr(affix.size()));
  if (!Prefix && self.size() >= affix.size() &&
      self.compare(self.size() - affix.size(), affix.size(), affix) == 0) {
    return Value::string(self.substr(0, self.size() - affix.size()));
  }
  return Value::string(self);
}

// Python's is*() predicates: false on the empty string, else every
// character must pass (isupper/islower: every cased one, and at least one).
template <bool (*Passes)(char32_t)>
Value predicate(const std::string& self, const CallArgs& call) {
  expect_no_arguments("str predicate", call);
  if (self.empty()) return Value::boolean(false);
  for (size_t pos = 0; pos < self.size();) {
    if (!Passes(utf8::decode(self, pos))) return Value::boolean(false);
  }
  return Value::boolean(true);
}

bool is_alnum(char32_t c) {
  return py::is_alpha_char(c) || py::is_digit_char(c);
}

template <bool Upper>
Value case_predicate(const std::string& self, const CallArgs& call) {
  expect_no_arguments(Upper ? "isupper" : "islower", call);
  bool any_cased = false;
  for (size_t pos = 0; pos < self.size();) {
    const char32_t c = utf8::decode(self, pos);
    if (Upper ? py::is_lower_char(c) : py::is_upper_char(c)) return Value::boolean(false);
    any_cased = any_cased || py::is_upper_char(c) || py::is_lower_char(c);
  }
  return Value::boolean(any_cased);
}

template <std::string (*Transform)(const std::string&)>
Value transform(const std::string& self, const CallArgs& call) {
  expect_no_arguments("str method", call);
  return Value::string(Transform(self));
}

std::string upper_string(const std::string& s) {
  return py::upper(s);
}
std::string lower_string(const std::string& s) {
  return py::lower(s);
}

const std::map<std::string_view, Method>& methods() {
  static const std::map<std::string_view, Method> table = {
      {"startswith", starts_with},
      {"endswith", ends_with},
      {"strip", strip_method<true, true>},
      {"lstrip", strip_method<true, false>},
      {"rstrip", strip_method<false, true>},
      {"split", split_method},
      {"rsplit", rsplit_method},
      {"splitlines", splitlines_method},
      {"replace", replace_method},
      {"join", join_method},
      {"find", find_method<false>},
      {"rfind", find_method<true>},
      {"count", count_method},
      {"removeprefix", remove_affix<true>},
      {"removesuffix", remove_affix<false>},
      {"upper", transform<upper_string>},
      {"lower", transform<lower_string>},
      {"casefold", transform<lower_string>},
      {"title", transform<title_string>},
      {"capitalize", transform<capitalize_string>},
      {"isdigit", predicate<py::is_digit_char>},
      {"isalpha", predicate<py::is_alpha_char>},
      {"isalnum", predicate<is_alnum>},
      {"isspace", predicate<py::is_space>},
      {"isupper", case_predicate<true>},
      {"islower", case_predicate<false>},
  };
  return table;
}

}  // namespace

std::optional<Value> string_method(const std::string& receiver, std::string_view name) {
  const auto found = methods().find(name);
  if (found != methods().end()) {
    const Method method = found->second;
    return Value::callable(std::string(name), [receiver, method](const CallArgs& call) {
      return method(receiver, call);
    });
  }
  if (std::find(kPythonStrMethods.begin(), kPythonStrMethods.end(), name) ==
      kPythonStrMethods.end()) {
    return std::nullopt;
  }
  return Value::callable(std::string(name), [method = std::string(name)](const CallArgs&) -> Value {
    fail("unsupported str method '", method, "'");
  });
}

}  // namespace hive::chat_template
