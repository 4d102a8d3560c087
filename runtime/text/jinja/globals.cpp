#include "runtime/text/jinja/globals.hpp"

#include <ctime>

#include "base/error.hpp"
#include "runtime/text/jinja/call_args.hpp"
#include "runtime/text/jinja/errors.hpp"
#include "runtime/text/jinja/value_ops.hpp"
#include "runtime/text/jinja/value_text.hpp"

namespace hive::chat_template {
namespace {

// The sandbox's limit on range() sizes.
constexpr int64_t kMaxRange = 100000;

Value range(const CallArgs& call) {
  check(call.keywords.empty(), "range() takes no keyword arguments");
  const auto& p = call.positional;
  check(!p.empty() && p.size() <= 3, "range expected 1 to 3 arguments, got ", p.size());
  for (const Value& v : p)
    check(v.is_integer(), "'", v.type_name(), "' object cannot be interpreted as an integer");
  const int64_t start = p.size() == 1 ? 0 : p[0].as_int();
  const int64_t stop = p.size() == 1 ? p[0].as_int() : p[1].as_int();
  const int64_t step = p.size() == 3 ? p[2].as_int() : 1;
  check(step != 0, "range() arg 3 must not be zero");
  ValueList out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    check(static_cast<int64_t>(out.size()) < kMaxRange,
          "Range too big. The sandbox blocks ranges larger than MAX_RANGE (", kMaxRange, ").");
    out.push_back(Value::integer(i));
  }
  return Value::list(std::move(out));
}

// dict(mapping or pairs, **kwargs) and namespace(...) take the same arguments.
Dict dict_arguments(std::string_view function, const CallArgs& call) {
  check(call.positional.size() <= 1, function, " expected at most 1 positional argument, got ",
        call.positional.size());
  Dict out;
  if (!call.positional.empty()) {
    const Value& source = call.positional[0];
    if (source.is_dict()) {
      out = source.as_dict();
    } else {
      for (const Value& pair : iterate(source)) {
        const ValueList items = iterate(pair);
        check(items.size() == 2, function, ": each positional item must be a (key, value) pair");
        out.set(items[0], items[1]);
      }
    }
  }
  for (const auto& [key, value] : call.keywords) out.set(key, value);
  return out;
}

Value make_namespace(const CallArgs& call) {
  auto ns = std::make_shared<Namespace>();
  ns->attributes = dict_arguments("namespace", call);
  for (const auto& [key, value] : ns->attributes.entries()) {
    check(key.is_string(), "namespace attribute names must be strings, not '", key.type_name(),
          "'");
    check(key.as_string().empty() || key.as_string()[0] != '_',
          "Chat templates cannot store underscore-prefixed attributes "
          "on a namespace, but got '",
          key.as_string(), "'. Please rename the attribute.");
  }
  return Value::namespace_object(std::move(ns));
}

Value raise_exception(const CallArgs& call) {
  BoundArgs args("raise_exception", call, {"message"});
  throw TemplateRaised("", args.has(0) ? to_str(*args.get(0)) : "");
}

// datetime.now().strftime(format), in local time.
Value strftime_now(const CallArgs& call) {
  BoundArgs args("strftime_now", call, {"format"});
  check(args.has(0), "strftime_now() missing required argument 'format'");
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buffer[512];
  const std::string format = to_str(*args.get(0));
  const size_t written = std::strftime(buffer, sizeof buffer, format.c_str(), &local);
  return Value::string(std::string(buffer, written));
}

Value unsupported_global(std::string name) {
  return Value::callable(
      name, [name](const CallArgs&) -> Value { fail("unsupported global function '", name, "'"); });
}

}  // namespace

ScopePtr make_global_scope() {
  auto scope = std::make_shared<Scope>();
  scope->set("range", Value::callable("range", range));
  scope->set("dict", Value::callable("dict", [](const CallArgs& call) {
               return Value::dict(dict_arguments("dict", call));
             }));
  scope->set("namespace", Value::callable("namespace", make_namespace));
  scope->set("raise_exception", Value::callable("raise_exception", raise_exception));
  scope->set("strftime_now", Value::callable("strftime_now", strftime_now));
  for (const char* name : {"cycler", "joiner", "lipsum"})
    scope->set(name, unsupported_global(name));
  return scope;
}

}  // namespace hive::chat_template
