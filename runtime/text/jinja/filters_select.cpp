// map, select/reject and selectattr/rejectattr: filters that apply another
// filter, a test or an attribute lookup to every item.
#include "base/error.hpp"
#include "runtime/text/jinja/filter_functions.hpp"
#include "runtime/text/jinja/filters.hpp"
#include "runtime/text/jinja/jinja_tests.hpp"
#include "runtime/text/jinja/object_access.hpp"
#include "runtime/text/jinja/python_chars.hpp"
#include "runtime/text/jinja/string_ops.hpp"
#include "runtime/text/jinja/value_ops.hpp"

namespace hive::chat_template::filter {
namespace {

// The arguments after the first `skip` positional ones.
CallArgs rest_of(const CallArgs& call, size_t skip) {
  CallArgs rest;
  if (skip < call.positional.size()) {
    rest.positional.assign(call.positional.begin() + static_cast<std::ptrdiff_t>(skip),
                           call.positional.end());
  }
  rest.keywords = call.keywords;
  return rest;
}

// select/reject(test, args...) and selectattr/rejectattr(attribute, test, args...);
// without a test an item passes when it is truthy.
Value filter_items(const Value& input, const CallArgs& call, bool by_attribute, bool keep_passing) {
  if (!input.truthy()) return Value::list({});
  const char* name = by_attribute ? (keep_passing ? "selectattr" : "rejectattr")
                                  : (keep_passing ? "select" : "reject");
  check(!by_attribute || !call.positional.empty(), name, ": missing parameter for attribute name");
  const size_t test_at = by_attribute ? 1 : 0;
  TestFunction test = nullptr;
  std::string test_name;
  if (call.positional.size() > test_at) {
    check(call.positional[test_at].is_string(), name, ": the test name must be a string");
    test_name = call.positional[test_at].as_string();
    test = find_test(test_name);
    check(test != nullptr, name, ": no test named '", test_name, "'");
  }
  const CallArgs test_args = rest_of(call, test_at + 1);
  ValueList out;
  for (const Value& item : iterate(input)) {
    const Value subject = by_attribute ? attribute_path(item, call.positional[0]) : item;
    const bool passes = test ? test(subject, test_args) : subject.truthy();
    if (passes == keep_passing) out.push_back(item);
  }
  return Value::list(std::move(out));
}

}  // namespace

Value attribute_path(const Value& item, const Value& attribute) {
  if (!attribute.is_string()) return get_item(item, attribute);
  Value current = item;
  const Value parts = split_string(attribute.as_string(), std::string("."), -1, false);
  for (const Value& part : parts.as_list()) {
    const std::string& text = part.as_string();
    const bool is_index = !text.empty() && text.size() < 19 &&
                          text.find_first_not_of("0123456789") == std::string::npos;
    current = get_item(current, is_index ? Value::integer(std::stoll(text)) : part);
  }
  return current;
}

Value ignore_case(const Value& value) {
  return value.is_string() ? Value::string(py::lower(value.as_string())) : value;
}

// map(attribute="x", default=d) looks an attribute up; map("filter", args...)
// applies a filter.
Value map(const Value& input, const CallArgs& call) {
  if (!input.truthy()) return Value::list({});
  ValueList out;
  if (call.positional.empty()) {
    const Value* attribute = nullptr;
    const Value* fallback = nullptr;
    for (const auto& [key, value] : call.keywords) {
      check(key == "attribute" || key == "default", "map: unexpected keyword argument '", key, "'");
      (key == "attribute" ? attribute : fallback) = &value;
    }
    check(attribute != nullptr, "map requires a filter argument");
    for (const Value& item : iterate(input)) {
      Value mapped = attribute_path(item, *attribute);
      if (fallback != nullptr && !fallback->is_none() && mapped.is_undefined()) mapped = *fallback;
      out.push_back(std::move(mapped));
    }
    return Value::list(std::move(out));
  }
  check(call.positional[0].is_string(), "map: the filter name must be a string");
  const std::string& name = call.positional[0].as_string();
  const FilterFunction filter = find_filter(name);
  check(filter != nullptr, "map: no filter named '", name, "'");
  const CallArgs filter_args = rest_of(call, 1);
  for (const Value& item : iterate(input)) out.push_back(filter(item, filter_args));
  return Value::list(std::move(out));
}

Value select(const Value& input, const CallArgs& call) {
  return filter_items(input, call, false, true);
}
Value reject(const Value& input, const CallArgs& call) {
  return filter_items(input, call, false, false);
}
Value selectattr(const Value& input, const CallArgs& call) {
  return filter_items(input, call, true, true);
}
Value rejectattr(const Value& input, const CallArgs& call) {
  return filter_items(input, call, true, false);
}

}  // namespace hive::chat_template::filter
