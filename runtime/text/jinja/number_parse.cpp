#include "runtime/text/jinja/number_parse.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/text/jinja/python_chars.hpp"

namespace hive::chat_template {
namespace {

std::string_view strip_space(std::string_view text) {
  size_t begin = 0, end = text.size();
  while (begin < end && py::is_space(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && py::is_space(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return 99;
}

// Removes underscores that sit between two digits of the base; any other
// underscore makes the text invalid (nullopt), as in Python.
std::optional<std::string> without_underscores(std::string_view digits, int base) {
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (digits[i] != '_') {
      out += digits[i];
      continue;
    }
    const bool between = i > 0 && i + 1 < digits.size() && digit_value(digits[i - 1]) < base &&
                         digit_value(digits[i + 1]) < base;
    if (!between) return std::nullopt;
  }
  return out;
}

}  // namespace

std::optional<int64_t> parse_python_int(std::string_view text, int64_t base) {
  text = strip_space(text);
  bool negative = false;
  if (!text.empty() && (text[0] == '+' || text[0] == '-'))
    negative = text[0] == '-', text.remove_prefix(1);
  if (text.size() > 2 && text[0] == '0') {
    const char prefix = static_cast<char>(text[1] | 0x20);
    const int64_t prefixed = prefix == 'x' ? 16 : prefix == 'o' ? 8 : prefix == 'b' ? 2 : 0;
    if (prefixed != 0 && (base == 0 || base == prefixed)) {
      base = prefixed;
      text.remove_prefix(text[2] == '_' ? 3 : 2);
    }
  }
  if (base == 0) base = 10;
  if (base < 2 || base > 36 || text.empty() || text[0] == '+' || text[0] == '-')
    return std::nullopt;
  const auto digits = without_underscores(text, static_cast<int>(base));
  if (!digits || digits->empty()) return std::nullopt;
  int64_t value = 0;
  const auto result = std::from_chars(digits->data(), digits->data() + digits->size(), value,
                                      static_cast<int>(base));
  if (result.ec != std::errc() || result.ptr != digits->data() + digits->size())
    return std::nullopt;
  return negative ? -value : value;
}

std::optional<double> parse_python_float(std::string_view text) {
  text = strip_space(text);
  std::string lowered;
  for (char c : text) lowered += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  std::string_view body = lowered;
  const bool negative = !body.empty() && body[0] == '-';
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) body.remove_prefix(1);
  if (body == "inf" || body == "infinity") return negative ? -INFINITY : INFINITY;
  if (body == "nan") return NAN;
  if (body.empty() || body[0] == '+' || body[0] == '-' ||
      body.find_first_not_of("0123456789._e+-") != std::string_view::npos) {
    return std::nullopt;
  }
  const auto digits = without_underscores(body, 10);
  if (!digits || digits->empty()) return std::nullopt;
  double value = 0;
  const auto result = std::from_chars(digits->data(), digits->data() + digits->size(), value);
  if (result.ec != std::errc() || result.ptr != digits->data() + digits->size())
    return std::nullopt;
  return negative ? -value : value;
}

int64_t round_integer(int64_t value, int64_t ndigits) {
  if (ndigits >= 0) return value;
  if (ndigits < -18) return 0;
  int64_t unit = 1;
  for (int64_t i = 0; i < -ndigits; ++i) unit *= 10;
  int64_t quotient = value / unit, remainder = value % unit;
  if (remainder < 0) --quotient, remainder += unit;
  if (2 * remainder > unit || (2 * remainder == unit && quotient % 2 != 0)) ++quotient;
  return quotient * unit;
}

// printf rounds the exact binary value half-to-even, which is what Python's
// round() does; reading the digits back gives the nearest double.
double round_float(double value, int64_t ndigits) {
  if (!std::isfinite(value) || ndigits > 323) return value;
  if (ndigits < 0) {
    const double unit = std::pow(10.0, static_cast<double>(-ndigits));
    return std::nearbyint(value / unit) * unit;
  }
  std::vector<char> buffer(static_cast<size_t>(ndigits) + 400);
  std::snprintf(buffer.data(), buffer.size(), "%.*f", static_cast<int>(ndigits), value);
  double rounded = 0;
  std::from_chars(buffer.data(), buffer.data() + std::char_traits<char>::length(buffer.data()),
                  rounded);
  return rounded;
}

}  // namespace hive::chat_template
