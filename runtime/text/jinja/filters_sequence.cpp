// Filters over sequences and mappings: length, first/last, list, reverse,
// join, sort, unique, min/max, sum, items, dictsort. String keys compare
// case-insensitively unless case_sensitive=true, as in jinja2.
#include <algorithm>

#include "base/error.hpp"
#include "runtime/text/jinja/call_args.hpp"
#include "runtime/text/jinja/filter_functions.hpp"
#include "runtime/text/jinja/string_ops.hpp"
#include "runtime/text/jinja/value_ops.hpp"
#include "runtime/text/jinja/value_text.hpp"
#include "runtime/text/utf8.hpp"

namespace hive::chat_template::filter {
namespace {

// jinja2's make_multi_attrgetter for sort: "a,b.c" gives a list key.
Value sort_key(const Value& item, const Value* attribute, bool case_sensitive) {
  const auto fold = [&](const Value& v) { return case_sensitive ? v : ignore_case(v); };
  if (attribute == nullptr || attribute->is_none()) return fold(item);
  if (!attribute->is_string()) return fold(attribute_path(item, *attribute));
  const ValueList names =
      split_string(attribute->as_string(), std::string(","), -1, false).as_list();
  if (names.size() == 1) return fold(attribute_path(item, names[0]));
  ValueList parts;
  for (const Value& name : names) parts.push_back(fold(attribute_path(item, name)));
  return Value::list(std::move(parts));
}

bool less(const Value& a, const Value& b) {
  return compare(a, b, "<") < 0;
}

// min/max: the first item whose key is smallest (or largest).
Value extreme(const Value& input, const CallArgs& call, const char* name, bool want_max) {
  BoundArgs args(name, call, {"case_sensitive", "attribute"});
  const ValueList items = iterate(input);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  const auto key = [&](const Value& item) {
    Value k = args.has(1) && !args.get(1)->is_none() ? attribute_path(item, *args.get(1)) : item;
    return args.flag_or(0, false) ? k : ignore_case(k);
  };
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    if (want_max ? less(key(items[best]), key(items[i])) : less(key(items[i]), key(items[best])))
      best = i;
  }
  return items[best];
}

}  // namespace

Value length(const Value& input, const CallArgs& call) {
  BoundArgs args("length", call, {});
  return Value::integer(chat_template::length(input));
}

Value first(const Value& input, const CallArgs& call) {
  BoundArgs args("first", call, {});
  const ValueList items = iterate(input);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value last(const Value& input, const CallArgs& call) {
  BoundArgs args("last", call, {});
  const ValueList items = iterate(input);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value list(const Value& input, const CallArgs& call) {
  BoundArgs args("list", call, {});
  return Value::list(iterate(input));
}

Value reverse(const Value& input, const CallArgs& call) {
  BoundArgs args("reverse", call, {});
  if (input.is_string()) {
    std::u32string text = utf8::to_u32(input.as_string());
    std::reverse(text.begin(), text.end());
    return Value::string(utf8::from_u32(text));
  }
  ValueList items = iterate(input);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value join(const Value& input, const CallArgs& call) {
  BoundArgs args("join", call, {"d", "attribute"});
  const std::string separator = args.has(0) ? to_str(*args.get(0)) : "";
  std::string out;
  bool first_item = true;
  for (const Value& item : iterate(input)) {
    if (!first_item) out += separator;
    first_item = false;
    out +=
        to_str(args.has(1) && !args.get(1)->is_none() ? attribute_path(item, *args.get(1)) : item);
  }
  return Value::string(std::move(out));
}

// Python's sorted(): stable, and with reverse=True equal items keep their order.
Value sort(const Value& input, const CallArgs& call) {
  BoundArgs args("sort", call, {"reverse", "case_sensitive", "attribute"});
  const ValueList items = iterate(input);
  std::vector<std::pair<Value, size_t>> keyed;
  for (size_t i = 0; i < items.size(); ++i) {
    keyed.emplace_back(sort_key(items[i], args.get(2), args.flag_or(1, false)), i);
  }
  const bool descending = args.flag_or(0, false);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    return descending ? less(b.first, a.first) : less(a.first, b.first);
  });
  ValueList out;
  for (const auto& entry : keyed) out.push_back(items[entry.second]);
  return Value::list(std::move(out));
}

Value unique(const Value& input, const CallArgs& call) {
  BoundArgs args("unique", call, {"case_sensitive", "attribute"});
  ValueList out, seen;
  for (const Value& item : iterate(input)) {
    Value key = args.has(1) && !args.get(1)->is_none() ? attribute_path(item, *args.get(1)) : item;
    if (!args.flag_or(0, false)) key = ignore_case(key);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); }))
      continue;
    seen.push_back(std::move(key));
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value min(const Value& input, const CallArgs& call) {
  return extreme(input, call, "min", false);
}
Value max(const Value& input, const CallArgs& call) {
  return extreme(input, call, "max", true);
}

Value sum(const Value& input, const CallArgs& call) {
  BoundArgs args("sum", call, {"attribute", "start"});
  Value total = args.has(1) ? *args.get(1) : Value::integer(0);
  for (const Value& item : iterate(input)) {
    const Value term =
        args.has(0) && !args.get(0)->is_none() ? attribute_path(item, *args.get(0)) : item;
    total = arithmetic(BinaryOp::add, total, term);
  }
  return total;
}

Value items(const Value& input, const CallArgs& call) {
  BoundArgs args("items", call, {});
  if (input.is_undefined()) return Value::list({});
  check(input.is_dict(), "Can only get item pairs from a mapping.");
  ValueList out;
  for (const auto& [key, value] : input.as_dict().entries()) {
    out.push_back(Value::tuple({key, value}));
  }
  return Value::list(std::move(out));
}

Value dictsort(const Value& input, const CallArgs& call) {
  BoundArgs args("dictsort", call, {"case_sensitive", "by", "reverse"});
  const std::string by = args.string_or(1, "key");
  check(by == "key" || by == "value", "You can only sort by either \"key\" or \"value\"");
  check(input.is_dict(), "dictsort expects a mapping, got '", input.type_name(), "'");
  ValueList pairs = items(input, {}).as_list();
  const size_t position = by == "key" ? 0 : 1;
  const bool case_sensitive = args.flag_or(0, false), descending = args.flag_or(2, false);
  const auto key = [&](const Value& pair) {
    const Value& part = pair.as_list()[position];
    return case_sensitive ? part : ignore_case(part);
  };
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& a, const Value& b) {
    return descending ? less(key(b), key(a)) : less(key(a), key(b));
  });
  return Value::list(std::move(pairs));
}

}  // namespace hive::chat_template::filter
