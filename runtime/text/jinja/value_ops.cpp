#include "runtime/text/jinja/value_ops.hpp"

#include "base/error.hpp"
#include "runtime/text/utf8.hpp"

namespace hive::chat_template {
namespace {

using Kind = Value::Kind;

int compare_sequences(const ValueList& a, const ValueList& b, std::string_view op) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (!equals(a[i], b[i])) return compare(a[i], b[i], op);
  }
  return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
}

bool dicts_equal(const Dict& a, const Dict& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [key, value] : a.entries()) {
    const Value* other = b.find(key);
    if (other == nullptr || !equals(value, *other)) return false;
  }
  return true;
}

}  // namespace

void raise_undefined(const Value& undefined) {
  fail(undefined.undefined_message());
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_integer() && b.is_integer()) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.is_sequence() && b.is_sequence()) {
    if (a.kind() != b.kind() || a.as_list().size() != b.as_list().size()) return false;
    for (size_t i = 0; i < a.as_list().size(); ++i) {
      if (!equals(a.as_list()[i], b.as_list()[i])) return false;
    }
    return true;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::undefined:
    case Kind::none:
      return true;
    case Kind::string:
      return a.as_string() == b.as_string();
    case Kind::dict:
      return dicts_equal(a.as_dict(), b.as_dict());
    case Kind::namespace_object:
      return &a.as_namespace() == &b.as_namespace();
    case Kind::callable:
      return &a.as_callable() == &b.as_callable();
    default:
      return false;
  }
}

int compare(const Value& a, const Value& b, std::string_view op) {
  if (a.is_undefined()) raise_undefined(a);
  if (b.is_undefined()) raise_undefined(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_integer() && b.is_integer())
      return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int());
    const double x = a.as_double(), y = b.as_double();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) return a.as_string().compare(b.as_string());
  if (a.is_sequence() && a.kind() == b.kind())
    return compare_sequences(a.as_list(), b.as_list(), op);
  fail("'", op, "' not supported between instances of '", a.type_name(), "' and '", b.type_name(),
       "'");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::undefined:
      return false;  // jinja2's Undefined iterates as empty
    case Kind::string:
      check(item.is_string(), "'in <string>' requires string as left operand, not ",
            item.type_name());
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Kind::list:
    case Kind::tuple:
      for (const Value& element : container.as_list()) {
        if (equals(element, item)) return true;
      }
      return false;
    case Kind::dict:
      return container.as_dict().find(item) != nullptr;
    default:
      fail("argument of type '", container.type_name(), "' is not iterable");
  }
}

int64_t length(const Value& value) {
  switch (value.kind()) {
    case Kind::undefined:
      return 0;
    case Kind::string:
      return static_cast<int64_t>(utf8::length(value.as_string()));
    case Kind::list:
    case Kind::tuple:
      return static_cast<int64_t>(value.as_list().size());
    case Kind::dict:
      return static_cast<int64_t>(value.as_dict().size());
    default:
      fail("object of type '", value.type_name(), "' has no len()");
  }
}

ValueList iterate(const Value& value) {
  switch (value.kind()) {
    case Kind::undefined:
      return {};
    case Kind::list:
    case Kind::tuple:
      return value.as_list();
    case Kind::dict: {
      ValueList keys;
      for (const auto& entry : value.as_dict().entries()) keys.push_back(entry.first);
      return keys;
    }
    case Kind::string: {
      ValueList characters;
      const std::string& s = value.as_string();
      for (size_t pos = 0; pos < s.size();) {
        const size_t start = pos;
        utf8::decode(s, pos);
        characters.push_back(Value::string(s.substr(start, pos - start)));
      }
      return characters;
    }
    default:
      fail("'", value.type_name(), "' object is not iterable");
  }
}

}  // namespace hive::chat_template
