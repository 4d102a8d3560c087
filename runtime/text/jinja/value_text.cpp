#include "runtime/text/jinja/value_text.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "runtime/text/utf8.hpp"

namespace hive::chat_template {
namespace {

// Python's str.isprintable() for the characters a chat can plausibly
// contain: controls, format characters, separators other than ' ', private
// use and surrogates print escaped. (Unassigned code points need the full
// Unicode database and print as themselves here.)
bool is_printable(char32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) return false;
  if (c == 0x061C || c == 0x1680 || c == 0x180E || c == 0x3000 || c == 0xFEFF) return false;
  if ((c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F)) return false;
  if ((c >= 0x205F && c <= 0x206F) || (c >= 0xD800 && c <= 0xF8FF)) return false;
  if ((c >= 0xFFF9 && c <= 0xFFFB) || c == 0xFFFE || c == 0xFFFF) return false;
  if ((c >= 0xE0000 && c <= 0xE007F) || c >= 0xF0000) return false;
  return true;
}

void append_hex_escape(std::string& out, char32_t c) {
  char buffer[16];
  if (c <= 0xFF) {
    std::snprintf(buffer, sizeof buffer, "\\x%02x", static_cast<unsigned>(c));
  } else if (c <= 0xFFFF) {
    std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
  } else {
    std::snprintf(buffer, sizeof buffer, "\\U%08x", static_cast<unsigned>(c));
  }
  out += buffer;
}

std::string join_repr(const ValueList& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += repr(items[i]);
  }
  return out;
}

std::string dict_repr(const Dict& dict) {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : dict.entries()) {
    if (!first) out += ", ";
    first = false;
    out += repr(key) + ": " + repr(value);
  }
  return out + "}";
}

}  // namespace

std::string string_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (size_t pos = 0; pos < s.size();) {
    const char32_t c = utf8::decode(s, pos);
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (is_printable(c)) {
      utf8::append(out, c);
    } else {
      append_hex_escape(out, c);
    }
  }
  return out + quote;
}

// Python's repr(float): the shortest digits that round-trip, in fixed
// notation when the decimal exponent is in [-4, 16), else scientific.
std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buffer[64];
  const auto result =
      std::to_chars(buffer, buffer + sizeof buffer, d, std::chars_format::scientific);
  std::string text(buffer, result.ptr);
  const size_t e = text.find('e');
  const int exponent = std::atoi(text.c_str() + e + 1);
  std::string mantissa = text.substr(0, e);
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  std::string out = negative ? "-" : "";
  const int point = exponent + 1;  // digits before the decimal point
  if (point > 16 || point <= -4) {
    out.append(digits, 0, 1);
    if (digits.size() > 1) out.append(1, '.').append(digits, 1, std::string::npos);
    char exp_text[16];
    std::snprintf(exp_text, sizeof exp_text, "e%c%02d", exponent < 0 ? '-' : '+',
                  std::abs(exponent));
    return out.append(exp_text);
  }
  if (point <= 0) return out.append("0.").append(static_cast<size_t>(-point), '0').append(digits);
  const auto whole = static_cast<size_t>(point);
  if (whole >= digits.size())
    return out.append(digits).append(whole - digits.size(), '0').append(".0");
  return out.append(digits, 0, whole).append(1, '.').append(digits, whole, std::string::npos);
}

std::string to_str(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::undefined:
      return "";
    case Value::Kind::string:
      return value.as_string();
    default:
      return repr(value);
  }
}

std::string repr(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::undefined:
      return "Undefined";
    case Value::Kind::none:
      return "None";
    case Value::Kind::boolean:
      return value.as_bool() ? "True" : "False";
    case Value::Kind::integer:
      return std::to_string(value.as_int());
    case Value::Kind::floating:
      return float_repr(value.as_double());
    case Value::Kind::string:
      return string_repr(value.as_string());
    case Value::Kind::list:
      return "[" + join_repr(value.as_list()) + "]";
    case Value::Kind::tuple:
      return "(" + join_repr(value.as_list()) + (value.as_list().size() == 1 ? ",)" : ")");
    case Value::Kind::dict:
      return dict_repr(value.as_dict());
    case Value::Kind::namespace_object:
      return "<Namespace " + dict_repr(value.as_namespace().attributes) + ">";
    case Value::Kind::callable:
      return "<function " + value.as_callable().name + ">";
  }
  return "";
}

}  // namespace hive::chat_template
