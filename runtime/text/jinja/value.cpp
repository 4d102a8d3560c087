#include "runtime/text/jinja/value.hpp"

#include "base/error.hpp"
#include "runtime/text/jinja/value_ops.hpp"

namespace hive::chat_template {

namespace {

// Python's hashable values: what may be a dict key.
bool hashable(const Value& key) {
  if (key.kind() == Value::Kind::tuple) {
    for (const Value& item : key.as_list()) {
      if (!hashable(item)) return false;
    }
    return true;
  }
  return key.is_none() || key.is_number() || key.is_string();
}

}  // namespace

const Value* Dict::find(std::string_view key) const {
  for (const auto& [name, value] : entries_) {
    if (name.is_string() && name.as_string() == key) return &value;
  }
  return nullptr;
}

const Value* Dict::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.as_string()));
  for (const auto& [name, value] : entries_) {
    if (equals(name, key)) return &value;
  }
  return nullptr;
}

void Dict::set(std::string key, Value value) {
  set(Value::string(std::move(key)), std::move(value));
}

void Dict::set(Value key, Value value) {
  check(hashable(key), "unhashable type: '", key.type_name(), "'");
  for (auto& [name, existing] : entries_) {
    if (equals(name, key)) {
      existing = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

void Dict::append_new(Value key, Value value) {
  entries_.emplace_back(std::move(key), std::move(value));
}

Value Value::undefined(std::string hint) {
  return {Kind::undefined, std::make_shared<const std::string>(std::move(hint))};
}
Value Value::none() {
  return {Kind::none, false};
}
Value Value::boolean(bool b) {
  return {Kind::boolean, b};
}
Value Value::integer(int64_t i) {
  return {Kind::integer, i};
}
Value Value::floating(double d) {
  return {Kind::floating, d};
}
Value Value::string(std::string s) {
  return {Kind::string, std::make_shared<const std::string>(std::move(s))};
}

Value Value::list(ValueList items) {
  return {Kind::list, std::make_shared<const ValueList>(std::move(items))};
}

Value Value::tuple(ValueList items) {
  return {Kind::tuple, std::make_shared<const ValueList>(std::move(items))};
}

Value Value::dict(Dict entries) {
  return {Kind::dict, std::make_shared<const Dict>(std::move(entries))};
}

Value Value::namespace_object(std::shared_ptr<Namespace> ns) {
  return {Kind::namespace_object, std::move(ns)};
}

Value Value::callable(std::string name, std::function<Value(const CallArgs&)> call) {
  return {Kind::callable,
          std::make_shared<const Callable>(Callable{std::move(name), std::move(call)})};
}

bool Value::as_bool() const {
  check(kind_ == Kind::boolean, "expected a boolean, got '", type_name(), "'");
  return std::get<bool>(data_);
}

int64_t Value::as_int() const {
  if (kind_ == Kind::boolean) return std::get<bool>(data_) ? 1 : 0;
  check(kind_ == Kind::integer, "expected an integer, got '", type_name(), "'");
  return std::get<int64_t>(data_);
}

double Value::as_double() const {
  if (kind_ == Kind::floating) return std::get<double>(data_);
  check(is_integer(), "expected a number, got '", type_name(), "'");
  return static_cast<double>(as_int());
}

const std::string& Value::as_string() const {
  check(kind_ == Kind::string, "expected a string, got '", type_name(), "'");
  return *std::get<std::shared_ptr<const std::string>>(data_);
}

const ValueList& Value::as_list() const {
  check(is_sequence(), "expected a list, got '", type_name(), "'");
  return *std::get<std::shared_ptr<const ValueList>>(data_);
}

const Dict& Value::as_dict() const {
  check(kind_ == Kind::dict, "expected a dict, got '", type_name(), "'");
  return *std::get<std::shared_ptr<const Dict>>(data_);
}

Namespace& Value::as_namespace() const {
  check(kind_ == Kind::namespace_object, "expected a namespace, got '", type_name(), "'");
  return *std::get<std::shared_ptr<Namespace>>(data_);
}

const Callable& Value::as_callable() const {
  check(kind_ == Kind::callable, "'", type_name(), "' object is not callable");
  return *std::get<std::shared_ptr<const Callable>>(data_);
}

std::string Value::undefined_message() const {
  const auto* hint = std::get_if<std::shared_ptr<const std::string>>(&data_);
  return hint == nullptr || (*hint)->empty() ? "value is undefined" : **hint;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::undefined:
    case Kind::none:
      return false;
    case Kind::boolean:
      return std::get<bool>(data_);
    case Kind::integer:
      return std::get<int64_t>(data_) != 0;
    case Kind::floating:
      return std::get<double>(data_) != 0.0;
    case Kind::string:
      return !as_string().empty();
    case Kind::list:
    case Kind::tuple:
      return !as_list().empty();
    case Kind::dict:
      return as_dict().size() != 0;
    case Kind::namespace_object:
    case Kind::callable:
      return true;
  }
  return false;
}

std::string_view Value::type_name() const {
  switch (kind_) {
    case Kind::undefined:
      return "Undefined";
    case Kind::none:
      return "NoneType";
    case Kind::boolean:
      return "bool";
    case Kind::integer:
      return "int";
    case Kind::floating:
      return "float";
    case Kind::string:
      return "str";
    case Kind::list:
      return "list";
    case Kind::tuple:
      return "tuple";
    case Kind::dict:
      return "dict";
    case Kind::namespace_object:
      return "Namespace";
    case Kind::callable:
      return "function";
  }
  return "object";
}

}  // namespace hive::chat_template
