#include "runtime/text/jinja/value_json.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "base/error.hpp"
#include "base/json_reader.hpp"
#include "runtime/text/jinja/value_ops.hpp"
#include "runtime/text/jinja/value_text.hpp"
#include "runtime/text/utf8.hpp"

namespace hive::chat_template {
namespace {

void append_unicode_escape(std::string& out, char32_t c) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
  out += buffer;
}

// json.dumps' string encoder: the short escapes, \u00XX for other controls,
// and with ensure_ascii every non-ASCII character as \uXXXX (UTF-16 pairs).
void append_json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (size_t pos = 0; pos < s.size();) {
    const char32_t c = utf8::decode(s, pos);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          append_unicode_escape(out, c);
        } else if (ensure_ascii && c >= 0x7F) {
          if (c >= 0x10000) {
            append_unicode_escape(out, 0xD800 + ((c - 0x10000) >> 10));
            append_unicode_escape(out, 0xDC00 + ((c - 0x10000) & 0x3FF));
          } else {
            append_unicode_escape(out, c);
          }
        } else {
          utf8::append(out, c);
        }
    }
  }
  out += '"';
}

class JsonWriter {
 public:
  JsonWriter(const JsonDumpOptions& options, std::string& out) : options_(options), out_(out) {}

  void write(const Value& value, int depth) {
    switch (value.kind()) {
      case Value::Kind::none:
        out_ += "null";
        return;
      case Value::Kind::boolean:
        out_ += value.as_bool() ? "true" : "false";
        return;
      case Value::Kind::integer:
        out_ += std::to_string(value.as_int());
        return;
      case Value::Kind::floating:
        write_float(value.as_double());
        return;
      case Value::Kind::string:
        append_json_string(out_, value.as_string(), options_.ensure_ascii);
        return;
      case Value::Kind::list:
      case Value::Kind::tuple:
        write_list(value.as_list(), depth);
        return;
      case Value::Kind::dict:
        write_dict(value.as_dict(), depth);
        return;
      default:
        fail("Object of type ", value.type_name(), " is not JSON serializable");
    }
  }

 private:
  void write_float(double d) {
    if (std::isnan(d)) {
      out_ += "NaN";
    } else if (std::isinf(d)) {
      out_ += d > 0 ? "Infinity" : "-Infinity";
    } else {
      out_ += float_repr(d);
    }
  }

  // Before each item: the separator (after the first), then with an indent a
  // newline and the indent repeated to the item's depth.
  void begin_item(bool first, int depth) {
    if (!first) out_ += options_.item_separator;
    newline(depth);
  }

  void newline(int depth) {
    if (!options_.indent) return;
    out_ += '\n';
    for (int i = 0; i < depth; ++i) out_ += *options_.indent;
  }

  void write_list(const ValueList& items, int depth) {
    if (items.empty()) {
      out_ += "[]";
      return;
    }
    out_ += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      begin_item(i == 0, depth + 1);
      write(items[i], depth + 1);
    }
    newline(depth);
    out_ += ']';
  }

  void write_dict(const Dict& dict, int depth) {
    if (dict.size() == 0) {
      out_ += "{}";
      return;
    }
    std::vector<const Dict::Entry*> entries;
    for (const auto& entry : dict.entries()) entries.push_back(&entry);
    if (options_.sort_keys) {
      std::stable_sort(entries.begin(), entries.end(), [](const auto* a, const auto* b) {
        return compare(a->first, b->first, "<") < 0;
      });
    }
    out_ += '{';
    for (size_t i = 0; i < entries.size(); ++i) {
      begin_item(i == 0, depth + 1);
      append_json_string(out_, key_text(entries[i]->first), options_.ensure_ascii);
      out_ += options_.key_separator;
      write(entries[i]->second, depth + 1);
    }
    newline(depth);
    out_ += '}';
  }

  // json.dumps turns the keys it accepts into strings.
  static std::string key_text(const Value& key) {
    switch (key.kind()) {
      case Value::Kind::string:
        return key.as_string();
      case Value::Kind::none:
        return "null";
      case Value::Kind::boolean:
        return key.as_bool() ? "true" : "false";
      case Value::Kind::integer:
        return std::to_string(key.as_int());
      case Value::Kind::floating:
        return float_repr(key.as_double());
      default:
        fail("keys must be str, int, float, bool or None, not ", key.type_name());
    }
  }

  const JsonDumpOptions& options_;
  std::string& out_;
};

// Messages and tools come from clients: a value nested deeper than the JSON
// reader's limit (kMaxJsonDepth) is refused before the recursion here (and
// in every walk of the Value after it) could exhaust the stack; text is
// refused by the reader itself, values built in code here.

Value from_json_at(const nlohmann::ordered_json& json, int depth) {
  check(depth <= kMaxJsonDepth, "a JSON value nested deeper than ", kMaxJsonDepth, " levels");
  using Type = nlohmann::ordered_json::value_t;
  switch (json.type()) {
    case Type::null:
      return Value::none();
    case Type::boolean:
      return Value::boolean(json.get<bool>());
    case Type::number_integer:
      return Value::integer(json.get<int64_t>());
    case Type::number_unsigned: {
      const auto u = json.get<uint64_t>();
      check(u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), "integer ", u,
            " does not fit in 64 bits");
      return Value::integer(static_cast<int64_t>(u));
    }
    case Type::number_float:
      return Value::floating(json.get<double>());
    case Type::string:
      return Value::string(json.get<std::string>());
    case Type::array: {
      ValueList items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(from_json_at(item, depth + 1));
      return Value::list(std::move(items));
    }
    case Type::object: {
      Dict dict;
      // JSON object keys are unique: no lookup per key (quadratic when wide).
      for (const auto& [key, item] : json.items())
        dict.append_new(Value::string(key), from_json_at(item, depth + 1));
      return Value::dict(std::move(dict));
    }
    default:
      fail("unsupported JSON value of type '", json.type_name(), "'");
  }
}

}  // namespace

Value from_json(const nlohmann::ordered_json& json) {
  return from_json_at(json, 0);
}

std::string to_json(const Value& value, const JsonDumpOptions& options) {
  std::string out;
  JsonWriter(options, out).write(value, 0);
  return out;
}

}  // namespace hive::chat_template
