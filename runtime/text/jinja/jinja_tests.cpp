#include "runtime/text/jinja/jinja_tests.hpp"

#include <map>

#include "base/error.hpp"
#include "runtime/text/jinja/call_args.hpp"
#include "runtime/text/jinja/filters.hpp"
#include "runtime/text/jinja/python_chars.hpp"
#include "runtime/text/jinja/value_ops.hpp"
#include "runtime/text/jinja/value_text.hpp"

namespace hive::chat_template {
namespace {

using Kind = Value::Kind;

// The test's single argument (`x is divisibleby 3` or `divisibleby(3)`).
const Value& operand(std::string_view test, const CallArgs& call) {
  static const std::string_view kParameter = "other";
  BoundArgs args(test, call, {kParameter});
  check(args.has(0), "test '", test, "' needs an argument");
  return call.positional.empty() ? call.keywords.front().second : call.positional.front();
}

bool no_args(std::string_view test, const CallArgs& call) {
  check(call.positional.empty() && call.keywords.empty(), "test '", test, "' takes no arguments");
  return true;
}

bool is_defined(const Value& v, const CallArgs& a) {
  return no_args("defined", a) && !v.is_undefined();
}
bool is_undefined(const Value& v, const CallArgs& a) {
  return no_args("undefined", a) && v.is_undefined();
}
bool is_none(const Value& v, const CallArgs& a) {
  return no_args("none", a) && v.is_none();
}
bool is_boolean(const Value& v, const CallArgs& a) {
  return no_args("boolean", a) && v.is_boolean();
}
bool is_true(const Value& v, const CallArgs& a) {
  return no_args("true", a) && v.is_boolean() && v.as_bool();
}
bool is_false(const Value& v, const CallArgs& a) {
  return no_args("false", a) && v.is_boolean() && !v.as_bool();
}
bool is_integer(const Value& v, const CallArgs& a) {
  return no_args("integer", a) && v.kind() == Kind::integer;
}
bool is_float(const Value& v, const CallArgs& a) {
  return no_args("float", a) && v.kind() == Kind::floating;
}
bool is_number(const Value& v, const CallArgs& a) {
  return no_args("number", a) && v.is_number();
}
bool is_string(const Value& v, const CallArgs& a) {
  return no_args("string", a) && v.is_string();
}
bool is_mapping(const Value& v, const CallArgs& a) {
  return no_args("mapping", a) && v.is_dict();
}
bool is_callable(const Value& v, const CallArgs& a) {
  return no_args("callable", a) && v.is_callable();
}

// Python's iter() works on strings, lists, dicts and jinja2's Undefined.
bool is_iterable(const Value& v, const CallArgs& a) {
  return no_args("iterable", a) &&
         (v.is_string() || v.is_sequence() || v.is_dict() || v.is_undefined());
}

// jinja2 asks for len() and __getitem__, which Undefined also has.
bool is_sequence(const Value& v, const CallArgs& a) {
  return no_args("sequence", a) &&
         (v.is_string() || v.is_sequence() || v.is_dict() || v.is_undefined());
}

bool is_lower(const Value& v, const CallArgs& a) {
  no_args("lower", a);
  const std::string text = to_str(v);
  return text == py::lower(text) && text != py::upper(text);
}

bool is_upper(const Value& v, const CallArgs& a) {
  no_args("upper", a);
  const std::string text = to_str(v);
  return text == py::upper(text) && text != py::lower(text);
}

bool is_odd(const Value& v, const CallArgs& a) {
  return no_args("odd", a) && v.is_integer() && v.as_int() % 2 != 0;
}
bool is_even(const Value& v, const CallArgs& a) {
  return no_args("even", a) && v.is_integer() && v.as_int() % 2 == 0;
}

bool is_divisible_by(const Value& v, const CallArgs& a) {
  return equals(arithmetic(BinaryOp::modulo, v, operand("divisibleby", a)), Value::integer(0));
}

bool is_eq(const Value& v, const CallArgs& a) {
  return equals(v, operand("eq", a));
}
bool is_ne(const Value& v, const CallArgs& a) {
  return !equals(v, operand("ne", a));
}
bool is_lt(const Value& v, const CallArgs& a) {
  return compare(v, operand("lt", a), "<") < 0;
}
bool is_le(const Value& v, const CallArgs& a) {
  return compare(v, operand("le", a), "<=") <= 0;
}
bool is_gt(const Value& v, const CallArgs& a) {
  return compare(v, operand("gt", a), ">") > 0;
}
bool is_ge(const Value& v, const CallArgs& a) {
  return compare(v, operand("ge", a), ">=") >= 0;
}
bool is_in(const Value& v, const CallArgs& a) {
  return contains(operand("in", a), v);
}

// Python's `is`: None and booleans are singletons; containers compare by
// identity, so equal but separately built ones are not the same.
bool is_same_as(const Value& v, const CallArgs& a) {
  const Value& other = operand("sameas", a);
  if (v.kind() != other.kind()) return false;
  if (v.is_sequence()) return &v.as_list() == &other.as_list();
  if (v.is_dict()) return &v.as_dict() == &other.as_dict();
  return equals(v, other);
}

bool is_filter(const Value& v, const CallArgs& a) {
  return no_args("filter", a) && v.is_string() && find_filter(v.as_string()) != nullptr;
}

bool is_test(const Value& v, const CallArgs& a) {
  return no_args("test", a) && v.is_string() && find_test(v.as_string()) != nullptr;
}

const std::map<std::string_view, TestFunction>& registry() {
  static const std::map<std::string_view, TestFunction> table = {
      {"defined", is_defined},
      {"undefined", is_undefined},
      {"none", is_none},
      {"boolean", is_boolean},
      {"true", is_true},
      {"false", is_false},
      {"integer", is_integer},
      {"float", is_float},
      {"number", is_number},
      {"string", is_string},
      {"mapping", is_mapping},
      {"callable", is_callable},
      {"iterable", is_iterable},
      {"sequence", is_sequence},
      {"lower", is_lower},
      {"upper", is_upper},
      {"odd", is_odd},
      {"even", is_even},
      {"divisibleby", is_divisible_by},
      {"eq", is_eq},
      {"equalto", is_eq},
      {"==", is_eq},
      {"ne", is_ne},
      {"!=", is_ne},
      {"lt", is_lt},
      {"lessthan", is_lt},
      {"<", is_lt},
      {"le", is_le},
      {"<=", is_le},
      {"gt", is_gt},
      {"greaterthan", is_gt},
      {">", is_gt},
      {"ge", is_ge},
      {">=", is_ge},
      {"in", is_in},
      {"sameas", is_same_as},
      {"filter", is_filter},
      {"test", is_test},
  };
  return table;
}

}  // namespace

TestFunction find_test(std::string_view name) {
  const auto found = registry().find(name);
  return found == registry().end() ? nullptr : found->second;
}

// `escaped` (has __html__) is the one jinja2 test left out: without
// autoescaping there is no markup type to detect.
bool is_jinja_builtin_test(std::string_view name) {
  return find_test(name) != nullptr || name == "escaped";
}

}  // namespace hive::chat_template
