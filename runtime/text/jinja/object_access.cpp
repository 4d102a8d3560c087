#include "runtime/text/jinja/object_access.hpp"

#include <algorithm>
#include <array>
#include <optional>

#include "base/error.hpp"
#include "runtime/text/jinja/call_args.hpp"
#include "runtime/text/jinja/string_methods.hpp"
#include "runtime/text/jinja/value_ops.hpp"
#include "runtime/text/jinja/value_text.hpp"
#include "runtime/text/utf8.hpp"

namespace hive::chat_template {
namespace {

using Kind = Value::Kind;

constexpr std::array kUnsafeDictMethods = {"clear", "pop", "popitem", "setdefault", "update"};
constexpr std::array kUnsafeListMethods = {"append", "clear",  "extend",  "insert",
                                           "pop",    "remove", "reverse", "sort"};

template <class Names>
bool listed(const Names& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// jinja2's object_type_repr: "dict object", or "None" for None.
std::string object_type(const Value& object) {
  if (object.is_none()) return "None";
  return std::string(object.type_name()) + " object";
}

Value missing_attribute(const Value& object, std::string_view name) {
  return Value::undefined(str_cat("'", object_type(object), "' has no attribute '", name, "'"));
}

Value missing_element(const Value& object, const Value& key) {
  return Value::undefined(str_cat(object_type(object), " has no element ", repr(key)));
}

Value unsafe_method(const Value& object, std::string_view name) {
  return Value::callable(
      std::string(name),
      [message = str_cat("access to attribute '", name, "' of '", object.type_name(),
                         "' object is unsafe.")](const CallArgs&) -> Value { fail(message); });
}

std::optional<Value> dict_method(const Value& dict, std::string_view name) {
  if (listed(kUnsafeDictMethods, name)) return unsafe_method(dict, name);
  const auto bind = [&](auto body) { return Value::callable(std::string(name), body); };
  if (name == "items" || name == "keys" || name == "values") {
    return bind([dict, which = std::string(name)](const CallArgs& call) {
      expect_no_arguments(which, call);
      ValueList out;
      for (const auto& [key, value] : dict.as_dict().entries()) {
        if (which == "items") out.push_back(Value::tuple({key, value}));
        if (which == "keys") out.push_back(key);
        if (which == "values") out.push_back(value);
      }
      return Value::list(std::move(out));
    });
  }
  if (name == "get") {
    return bind([dict](const CallArgs& call) {
      BoundArgs args("get", call, {"key", "default"});
      check(args.has(0), "get expected at least 1 argument, got 0");
      const Value& key = *args.get(0);
      const Value* found = dict.as_dict().find(key);
      if (found != nullptr) return *found;
      return args.has(1) ? *args.get(1) : Value::none();
    });
  }
  if (name == "copy") return bind([dict](const CallArgs&) { return dict; });
  if (name == "fromkeys") {
    return bind([](const CallArgs&) -> Value { fail("unsupported dict method 'fromkeys'"); });
  }
  return std::nullopt;
}

std::optional<Value> list_method(const Value& list, std::string_view name) {
  if (listed(kUnsafeListMethods, name)) return unsafe_method(list, name);
  if (name == "index" || name == "count") {
    return Value::callable(std::string(name),
                           [list, which = std::string(name)](const CallArgs& call) {
                             BoundArgs args(which, call, {"value"});
                             check(args.has(0), which, "() takes exactly one argument (0 given)");
                             const ValueList& items = list.as_list();
                             int64_t count = 0;
                             for (size_t i = 0; i < items.size(); ++i) {
                               if (!equals(items[i], *args.get(0))) continue;
                               if (which == "index") return Value::integer(static_cast<int64_t>(i));
                               ++count;
                             }
                             if (which != "count") fail(repr(*args.get(0)), " is not in list");
                             return Value::integer(count);
                           });
  }
  if (name == "copy") return Value::callable("copy", [list](const CallArgs&) { return list; });
  return std::nullopt;
}

// Python's slice.indices(): clamps one bound for the given step direction.
int64_t clamp_bound(const Value& bound, int64_t size, int64_t step, bool is_start) {
  if (bound.is_none()) return step < 0 ? (is_start ? size - 1 : -1) : (is_start ? 0 : size);
  check(bound.is_integer(), "slice indices must be integers or None, not ", bound.type_name());
  int64_t index = bound.as_int();
  if (index < 0) {
    index += size;
    if (index < 0) index = step < 0 ? -1 : 0;
  } else if (index >= size) {
    index = step < 0 ? size - 1 : size;
  }
  return index;
}

}  // namespace

Value get_attribute(const Value& object, std::string_view name) {
  switch (object.kind()) {
    case Kind::undefined:
      raise_undefined(object);
    case Kind::string:
      if (auto method = string_method(object.as_string(), name)) return *method;
      break;
    case Kind::dict: {
      if (auto method = dict_method(object, name)) return *method;
      if (const Value* found = object.as_dict().find(name)) return *found;
      break;
    }
    case Kind::list:
    case Kind::tuple:
      if (auto method = list_method(object, name)) return *method;
      break;
    case Kind::namespace_object:
      if (const Value* found = object.as_namespace().attributes.find(name)) return *found;
      break;
    default:
      break;
  }
  return missing_attribute(object, name);
}

Value get_item(const Value& object, const Value& key) {
  if (object.is_undefined()) raise_undefined(object);
  if (object.is_dict()) {
    if (const Value* found = object.as_dict().find(key)) return *found;
  }
  if ((object.is_sequence() || object.is_string()) && key.is_integer()) {
    const int64_t size = length(object);
    int64_t index = key.as_int();
    if (index < 0) index += size;
    if (index < 0 || index >= size) return missing_element(object, key);
    if (object.is_sequence()) return object.as_list()[static_cast<size_t>(index)];
    const std::u32string text = utf8::to_u32(object.as_string());
    return Value::string(utf8::from_u32(text.substr(static_cast<size_t>(index), 1)));
  }
  if (key.is_string()) return get_attribute(object, key.as_string());
  return missing_element(object, key);
}

Value get_slice(const Value& object, const Value& start, const Value& stop, const Value& step) {
  if (object.is_undefined()) raise_undefined(object);
  if (!object.is_sequence() && !object.is_string()) {
    return Value::undefined(str_cat("'", object_type(object), "' cannot be sliced"));
  }
  check(step.is_none() || step.is_integer(), "slice indices must be integers or None, not ",
        step.type_name());
  const int64_t stride = step.is_none() ? 1 : step.as_int();
  check(stride != 0, "slice step cannot be zero");
  const int64_t size = length(object);
  const int64_t first = clamp_bound(start, size, stride, true);
  const int64_t last = clamp_bound(stop, size, stride, false);
  std::vector<size_t> picked;
  for (int64_t i = first; stride > 0 ? i < last : i > last; i += stride) {
    picked.push_back(static_cast<size_t>(i));
  }
  if (object.is_string()) {
    const std::u32string text = utf8::to_u32(object.as_string());
    std::u32string out;
    for (size_t i : picked) out += text[i];
    return Value::string(utf8::from_u32(out));
  }
  ValueList out;
  for (size_t i : picked) out.push_back(object.as_list()[i]);
  return object.kind() == Kind::tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

}  // namespace hive::chat_template
