#include "runtime/text/jinja/python_chars.hpp"

#include <locale.h>
#include <wctype.h>

#include "runtime/text/utf8.hpp"

namespace hive::chat_template::py {
namespace {

// One process-wide read-only locale object, created on first use; the *_l
// functions never touch the global locale, so this is thread-safe.
locale_t unicode_locale() {
  static const locale_t locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", locale_t{});
  return locale;
}

}  // namespace

bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

char32_t upper_char(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  const locale_t locale = unicode_locale();
  return locale ? static_cast<char32_t>(towupper_l(static_cast<wint_t>(c), locale)) : c;
}

char32_t lower_char(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  const locale_t locale = unicode_locale();
  return locale ? static_cast<char32_t>(towlower_l(static_cast<wint_t>(c), locale)) : c;
}

bool is_upper_char(char32_t c) {
  if (c < 0x80) return c >= 'A' && c <= 'Z';
  const locale_t locale = unicode_locale();
  return locale && iswupper_l(static_cast<wint_t>(c), locale);
}

bool is_lower_char(char32_t c) {
  if (c < 0x80) return c >= 'a' && c <= 'z';
  const locale_t locale = unicode_locale();
  return locale && iswlower_l(static_cast<wint_t>(c), locale);
}

bool is_alpha_char(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  const locale_t locale = unicode_locale();
  return locale && iswalpha_l(static_cast<wint_t>(c), locale);
}

bool is_digit_char(char32_t c) {
  return c >= '0' && c <= '9';
}

std::string upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) {
    const char32_t c = utf8::decode(s, pos);
    if (c == U'\u00DF') {
      out += "SS";
    } else {
      utf8::append(out, upper_char(c));
    }
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) utf8::append(out, lower_char(utf8::decode(s, pos)));
  return out;
}

}  // namespace hive::chat_template::py
