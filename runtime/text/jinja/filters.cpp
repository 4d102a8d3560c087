#include "runtime/text/jinja/filters.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "base/error.hpp"
#include "runtime/text/jinja/call_args.hpp"
#include "runtime/text/jinja/filter_functions.hpp"
#include "runtime/text/jinja/number_parse.hpp"
#include "runtime/text/jinja/object_access.hpp"
#include "runtime/text/jinja/value_json.hpp"
#include "runtime/text/jinja/value_ops.hpp"
#include "runtime/text/jinja/value_text.hpp"

namespace hive::chat_template {
namespace filter {

Value default_value(const Value& input, const CallArgs& call) {
  BoundArgs args("default", call, {"default_value", "boolean"});
  const bool replace = input.is_undefined() || (args.flag_or(1, false) && !input.truthy());
  if (!replace) return input;
  return args.has(0) ? *args.get(0) : Value::string("");
}

// transformers' tojson(x, ensure_ascii=False, indent=None, separators=None,
// sort_keys=False) around json.dumps; note ensure_ascii comes first.
Value tojson(const Value& input, const CallArgs& call) {
  BoundArgs args("tojson", call, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions options;
  options.ensure_ascii = args.flag_or(0, false);
  options.sort_keys = args.flag_or(3, false);
  if (const Value* indent = args.get(1); indent != nullptr && !indent->is_none()) {
    options.indent =
        indent->is_string()
            ? indent->as_string()
            : std::string(static_cast<size_t>(std::max<int64_t>(0, indent->as_int())), ' ');
    options.item_separator.assign(1, ',');  // json.dumps drops the space when indenting
  }
  if (const Value* separators = args.get(2); separators != nullptr && !separators->is_none()) {
    check(separators->is_sequence() && separators->as_list().size() == 2,
          "tojson: separators must be an (item_separator, key_separator) pair");
    options.item_separator = separators->as_list()[0].as_string();
    options.key_separator = separators->as_list()[1].as_string();
  }
  return Value::string(to_json(input, options));
}

// int(value), else int(float(value)) (so "42.23" gives 42), else the default.
Value to_int(const Value& input, const CallArgs& call) {
  BoundArgs args("int", call, {"default", "base"});
  if (input.is_undefined()) raise_undefined(input);  // jinja2's Undefined.__int__ raises
  const Value fallback = args.has(0) ? *args.get(0) : Value::integer(0);
  if (input.is_integer()) return Value::integer(input.as_int());
  std::optional<double> number;
  if (input.is_string()) {
    if (auto parsed = parse_python_int(input.as_string(), args.int_or(1, 10)))
      return Value::integer(*parsed);
    number = parse_python_float(input.as_string());
  } else if (input.kind() == Value::Kind::floating) {
    number = input.as_double();
  }
  if (!number || !std::isfinite(*number) || std::fabs(*number) >= 9.2e18) return fallback;
  return Value::integer(static_cast<int64_t>(std::trunc(*number)));
}

Value to_float(const Value& input, const CallArgs& call) {
  BoundArgs args("float", call, {"default"});
  if (input.is_undefined()) raise_undefined(input);
  if (input.is_number()) return Value::floating(input.as_double());
  if (input.is_string()) {
    if (auto parsed = parse_python_float(input.as_string())) return Value::floating(*parsed);
  }
  return args.has(0) ? *args.get(0) : Value::floating(0.0);
}

Value abs(const Value& input, const CallArgs& call) {
  BoundArgs args("abs", call, {});
  if (input.kind() == Value::Kind::floating) return Value::floating(std::fabs(input.as_double()));
  check(input.is_integer(), "bad operand type for abs(): '", input.type_name(), "'");
  return input.as_int() < 0 ? negate(input) : Value::integer(input.as_int());
}

Value round(const Value& input, const CallArgs& call) {
  BoundArgs args("round", call, {"precision", "method"});
  const int64_t precision = args.int_or(0, 0);
  const std::string method = args.string_or(1, "common");
  check(method == "common" || method == "ceil" || method == "floor",
        "method must be common, ceil or floor");
  check(input.is_number(), "type ", input.type_name(), " doesn't define __round__ method");
  if (method != "common") {
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double scaled = input.as_double() * scale;
    return Value::floating((method == "ceil" ? std::ceil(scaled) : std::floor(scaled)) / scale);
  }
  if (input.is_integer()) return Value::integer(round_integer(input.as_int(), precision));
  return Value::floating(round_float(input.as_double(), precision));
}

// Only Python attributes, never items: on a dict that means its methods.
Value attr(const Value& input, const CallArgs& call) {
  BoundArgs args("attr", call, {"name"});
  const std::string name = to_str(args.has(0) ? *args.get(0) : Value());
  if (input.is_dict() && !get_attribute(Value::dict({}), name).is_callable()) {
    return Value::undefined("'dict object' has no attribute '" + name + "'");
  }
  return get_attribute(input, name);
}

}  // namespace filter

namespace {

const std::map<std::string_view, FilterFunction>& registry() {
  using namespace filter;
  static const std::map<std::string_view, FilterFunction> table = {
      {"abs", abs},
      {"attr", attr},
      {"capitalize", capitalize},
      {"center", center},
      {"count", length},
      {"d", default_value},
      {"default", default_value},
      {"dictsort", dictsort},
      {"e", escape},
      {"escape", escape},
      {"first", first},
      {"float", to_float},
      {"indent", indent},
      {"int", to_int},
      {"items", items},
      {"join", join},
      {"last", last},
      {"length", length},
      {"list", list},
      {"lower", lower},
      {"map", map},
      {"max", max},
      {"min", min},
      {"reject", reject},
      {"rejectattr", rejectattr},
      {"replace", replace},
      {"reverse", reverse},
      {"round", round},
      {"safe", safe},
      {"select", select},
      {"selectattr", selectattr},
      {"sort", sort},
      {"string", string},
      {"sum", sum},
      {"title", title},
      {"tojson", tojson},
      {"trim", trim},
      {"truncate", truncate},
      {"unique", unique},
      {"upper", upper},
      {"wordcount", wordcount},
  };
  return table;
}

// jinja2 3.1's built-in filters that are not in the registry above.
constexpr std::array<std::string_view, 13> kUnsupportedBuiltins = {
    "batch", "filesizeformat", "forceescape", "format", "groupby",  "pprint", "random",
    "slice", "striptags",      "urlencode",   "urlize", "wordwrap", "xmlattr"};

}  // namespace

FilterFunction find_filter(std::string_view name) {
  const auto found = registry().find(name);
  return found == registry().end() ? nullptr : found->second;
}

bool is_jinja_builtin_filter(std::string_view name) {
  return find_filter(name) != nullptr ||
         std::find(kUnsupportedBuiltins.begin(), kUnsupportedBuiltins.end(), name) !=
             kUnsupportedBuiltins.end();
}

}  // namespace hive::chat_template
