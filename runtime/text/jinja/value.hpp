#pragma once
// The dynamic value a chat template computes with. Its semantics are
// Python's, because templates are written against jinja2: `bool` is a kind
// of int, dicts keep insertion order (tojson and items() show it), lists and
// dicts are immutable once built (the transformers sandbox forbids mutating
// them), and only a namespace is shared and mutable.
//
//   Value ── kind ─┬─ undefined (carries a hint for the error it raises when used)
//                  ├─ none, boolean, integer (int64), floating (double), string (UTF-8)
//                  ├─ list / tuple ──> shared const ValueList
//                  ├─ dict ──────────> shared const Dict (string keys, ordered)
//                  ├─ namespace ─────> shared mutable Namespace
//                  └─ callable ──────> shared const Callable (macros, methods, globals)
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace hive::chat_template {

class Value;
using ValueList = std::vector<Value>;

// A map that keeps insertion order, like a Python dict. Keys are strings
// almost always (JSON has no others), but a template may build {0: 'a'}, so
// any hashable value can be a key; keys compare as Python's do (1 == 1.0 ==
// True is one key).
class Dict {
 public:
  using Entry = std::pair<Value, Value>;  // key, value

  const Value* find(std::string_view key) const;  // a string key
  const Value* find(const Value& key) const;
  // Replaces the value in place when the key exists, else appends; a key
  // Python cannot hash (a list, a dict) fails as it does in Python.
  void set(std::string key, Value value);
  void set(Value key, Value value);
  // Appends a key the caller knows is not present (the keys of a JSON object).
  void append_new(Value key, Value value);
  const std::vector<Entry>& entries() const { return entries_; }
  // Defined below Value: clang instantiates the vector's size() here, where
  // Value is still incomplete.
  size_t size() const;

 private:
  std::vector<Entry> entries_;
};

// jinja2's namespace(): the one value templates may mutate (`set ns.x = 1`),
// which is why it is held by reference.
struct Namespace {
  Dict attributes;
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

struct Callable {
  std::string name;
  std::function<Value(const CallArgs&)> call;
};

class Value {
 public:
  enum class Kind {
    undefined,
    none,
    boolean,
    integer,
    floating,
    string,
    list,
    tuple,
    dict,
    namespace_object,
    callable,
  };

  Value() = default;  // undefined, with no hint
  static Value undefined(std::string hint);
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value floating(double d);
  static Value string(std::string s);
  static Value list(ValueList items);
  static Value tuple(ValueList items);
  static Value dict(Dict entries);
  static Value namespace_object(std::shared_ptr<Namespace> ns);
  static Value callable(std::string name, std::function<Value(const CallArgs&)> call);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::undefined; }
  bool is_none() const { return kind_ == Kind::none; }
  bool is_boolean() const { return kind_ == Kind::boolean; }
  // Python's int includes bool.
  bool is_integer() const { return kind_ == Kind::integer || kind_ == Kind::boolean; }
  bool is_number() const { return is_integer() || kind_ == Kind::floating; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_sequence() const { return kind_ == Kind::list || kind_ == Kind::tuple; }
  bool is_dict() const { return kind_ == Kind::dict; }
  bool is_namespace() const { return kind_ == Kind::namespace_object; }
  bool is_callable() const { return kind_ == Kind::callable; }

  bool as_bool() const;
  int64_t as_int() const;    // integers and booleans
  double as_double() const;  // any number
  const std::string& as_string() const;
  const ValueList& as_list() const;  // lists and tuples
  const Dict& as_dict() const;
  Namespace& as_namespace() const;
  const Callable& as_callable() const;
  // The message an undefined value raises when it is used.
  std::string undefined_message() const;

  // Python's bool(value).
  bool truthy() const;
  // Python's type name, for error messages: 'str', 'int', 'NoneType', ...
  std::string_view type_name() const;

 private:
  // Strings are shared too: templates read the same message text many times.
  using Storage =
      std::variant<std::monostate, bool, int64_t, double, std::shared_ptr<const std::string>,
                   std::shared_ptr<const ValueList>, std::shared_ptr<const Dict>,
                   std::shared_ptr<Namespace>, std::shared_ptr<const Callable>>;
  Value(Kind kind, Storage data) : kind_(kind), data_(std::move(data)) {}

  Kind kind_ = Kind::undefined;
  Storage data_;  // the string alternative holds a string's text or an undefined's hint
};

inline size_t Dict::size() const { return entries_.size(); }

}  // namespace hive::chat_template
