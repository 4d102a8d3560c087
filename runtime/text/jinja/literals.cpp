#include "runtime/text/jinja/literals.hpp"

#include <array>
#include <charconv>

#include "base/error.hpp"
#include "runtime/text/utf8.hpp"

namespace hive::chat_template {
namespace {

constexpr size_t kNoMatch = std::string_view::npos;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
char at(std::string_view text, size_t pos) {
  return pos < text.size() ? text[pos] : '\0';
}
char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
}

// `(\d+_)*\d+`: digits with single underscores between them; the end of the
// run, or kNoMatch when no digit starts at pos.
size_t digit_run(std::string_view text, size_t pos) {
  if (!is_digit(at(text, pos))) return kNoMatch;
  while (is_digit(at(text, pos))) ++pos;
  while (at(text, pos) == '_' && is_digit(at(text, pos + 1))) {
    ++pos;
    while (is_digit(at(text, pos))) ++pos;
  }
  return pos;
}

// jinja2's float_re: digits, then an exponent (with an optional fraction
// before it) or a fraction alone.
size_t float_end(std::string_view text, size_t pos) {
  if (pos > 0 && text[pos - 1] == '.') return kNoMatch;
  const size_t whole = digit_run(text, pos);
  if (whole == kNoMatch) return kNoMatch;
  size_t mantissa = whole;
  const size_t fraction = at(text, whole) == '.' ? digit_run(text, whole + 1) : kNoMatch;
  if (fraction != kNoMatch) mantissa = fraction;
  if (lower(at(text, mantissa)) == 'e') {
    size_t exponent = mantissa + 1;
    if (at(text, exponent) == '+' || at(text, exponent) == '-') ++exponent;
    const size_t end = digit_run(text, exponent);
    if (end != kNoMatch) return end;
  }
  return fraction;
}

int digit_value(char c) {
  c = lower(c);
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  return 99;
}

// `0b(_?[01])+`, `0o(_?[0-7])+`, `0x(_?[0-9a-f])+`, `[1-9](_?\d)*`, `0(_?0)*`.
size_t integer_end(std::string_view text, size_t pos, int& base) {
  const auto run = [&](size_t p, int digit_base) {
    const size_t start = p;
    while (true) {
      const size_t q = at(text, p) == '_' ? p + 1 : p;
      if (digit_value(at(text, q)) >= digit_base) break;
      p = q + 1;
    }
    return p == start ? kNoMatch : p;
  };
  if (at(text, pos) == '0') {
    const char prefix = lower(at(text, pos + 1));
    base = prefix == 'b' ? 2 : prefix == 'o' ? 8 : prefix == 'x' ? 16 : 0;
    if (base != 0) {
      const size_t end = run(pos + 2, base);
      if (end != kNoMatch) return end;
    }
    base = 10;
    size_t p = pos + 1;
    while (at(text, p) == '0' || (at(text, p) == '_' && at(text, p + 1) == '0')) ++p;
    return at(text, p - 1) == '_' ? p - 1 : p;
  }
  base = 10;
  if (!is_digit(at(text, pos))) return kNoMatch;
  const size_t end = run(pos + 1, 10);
  return end == kNoMatch ? pos + 1 : end;
}

void append_escape(const Source& source, size_t offset, std::string_view body, size_t& i,
                   std::string& out);

}  // namespace

size_t scan_number(std::string_view text, size_t pos, Token& token) {
  std::string digits;
  if (const size_t end = float_end(text, pos); end != kNoMatch) {
    for (char c : text.substr(pos, end - pos)) {
      if (c != '_') digits += c;
    }
    std::from_chars(digits.data(), digits.data() + digits.size(), token.floating);
    token.type = TokenType::floating;
    return end - pos;
  }
  int base = 10;
  const size_t end = integer_end(text, pos, base);
  if (end == kNoMatch) return 0;
  const size_t skip = base == 10 ? 0 : 2;
  for (char c : text.substr(pos + skip, end - pos - skip)) {
    if (c != '_') digits += c;
  }
  const auto result =
      std::from_chars(digits.data(), digits.data() + digits.size(), token.integer, base);
  check(result.ec == std::errc(), "integer literal ", text.substr(pos, end - pos),
        " does not fit in 64 bits");
  token.type = TokenType::integer;
  return end - pos;
}

size_t scan_name(std::string_view text, size_t pos) {
  const auto word = [](char c, bool first) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && is_digit(c));
  };
  if (!word(at(text, pos), true)) return 0;
  size_t end = pos + 1;
  while (word(at(text, end), false)) ++end;
  return end - pos;
}

size_t scan_operator(std::string_view text, size_t pos) {
  static constexpr std::array<std::string_view, 6> kDouble = {"**", "//", "==", "!=", ">=", "<="};
  for (std::string_view op : kDouble) {
    if (text.substr(pos, 2) == op) return 2;
  }
  return std::string_view("+-/*%~[](){}><=.:|,;").find(at(text, pos)) != kNoMatch ? 1 : 0;
}

size_t scan_string(const Source& source, size_t pos, Token& token) {
  const std::string_view text = source.text();
  const char quote = text[pos];
  size_t end = pos + 1;
  while (end < text.size() && text[end] != quote) end += text[end] == '\\' ? 2 : 1;
  if (end >= text.size()) source.fail_at(pos, "unterminated string literal");
  const std::string_view body = text.substr(pos + 1, end - pos - 1);
  token.type = TokenType::string;
  token.text.clear();
  for (size_t i = 0; i < body.size();) {
    if (body[i] != '\\') {
      token.text += body[i++];
    } else {
      append_escape(source, pos + 1 + i, body, i, token.text);
    }
  }
  return end + 1 - pos;
}

namespace {

// Python's unicode-escape codec at body[i] == '\\'; unknown escapes stay as
// written, as Python leaves them.
void append_escape(const Source& source, size_t offset, std::string_view body, size_t& i,
                   std::string& out) {
  const char c = at(body, i + 1);
  static constexpr std::string_view kSimple = "\\'\"abfnrtv";
  static constexpr std::string_view kMeaning = "\\'\"\a\b\f\n\r\t\v";
  if (const size_t k = kSimple.find(c); c != '\0' && k != kNoMatch) {
    out += kMeaning[k];
    i += 2;
    return;
  }
  if (c == '\n') {  // a backslash-newline continues the line
    i += 2;
    return;
  }
  if (c >= '0' && c <= '7') {
    size_t j = i + 1;
    char32_t value = 0;
    for (; j < body.size() && j < i + 4 && body[j] >= '0' && body[j] <= '7'; ++j) {
      value = value * 8 + static_cast<char32_t>(body[j] - '0');
    }
    utf8::append(out, value);
    i = j;
    return;
  }
  const size_t width = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
  if (width == 0) {
    if (c == 'N') source.fail_at(offset, "unsupported escape \\N{...} in a string literal");
    out += '\\';
    ++i;
    return;
  }
  char32_t value = 0;
  for (size_t j = i + 2; j < i + 2 + width; ++j) {
    const int digit = digit_value(at(body, j));
    if (digit >= 16) source.fail_at(offset, "truncated \\", c, " escape in a string literal");
    value = value * 16 + static_cast<char32_t>(digit);
  }
  if (value > 0x10FFFF) source.fail_at(offset, "illegal Unicode character in a string literal");
  utf8::append(out, value);
  i += 2 + width;
}

}  // namespace
}  // namespace hive::chat_template
