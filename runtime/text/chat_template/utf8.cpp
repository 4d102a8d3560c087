#include "runtime/text/chat_template/utf8.hpp"

#include <locale.h>
#include <wctype.h>

namespace hive::chat_template::utf8 {
namespace {

// Malformed bytes decode to lone surrogates U+DC80..U+DCFF and encode back
// to the same byte (Python's "surrogateescape"), so a round trip is lossless.
constexpr char32_t kEscapedByte = 0xDC00;

// One process-wide read-only locale object, created on first use; the *_l
// functions never touch the global locale, so this is thread-safe.
locale_t unicode_locale() {
  static const locale_t locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", locale_t{});
  return locale;
}

}  // namespace

char32_t decode(std::string_view s, size_t& pos) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(pos);
  int extra = 0;
  char32_t code_point = lead;
  if ((lead & 0xE0) == 0xC0) {
    extra = 1, code_point = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    extra = 2, code_point = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    extra = 3, code_point = lead & 0x07;
  }
  const char32_t escaped = kEscapedByte + lead;
  if (lead >= 0x80 && (extra == 0 || pos + extra >= s.size())) {
    ++pos;
    return escaped;
  }
  for (int i = 1; i <= extra; ++i) {
    if ((byte(pos + i) & 0xC0) != 0x80) {
      ++pos;
      return escaped;
    }
    code_point = (code_point << 6) | (byte(pos + i) & 0x3F);
  }
  pos += 1 + extra;
  return code_point;
}

void append(std::string& out, char32_t c) {
  if (c >= kEscapedByte + 0x80 && c <= kEscapedByte + 0xFF) {
    out += static_cast<char>(c - kEscapedByte);
  } else if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

std::u32string to_u32(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) out += decode(s, pos);
  return out;
}

std::string from_u32(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append(out, c);
  return out;
}

size_t length(std::string_view s) {
  size_t count = 0;
  for (size_t pos = 0; pos < s.size(); ++count) decode(s, pos);
  return count;
}

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
    const char32_t c = decode(s, pos);
    if (c == U'\u00DF') {
      out += "SS";
    } else {
      append(out, upper_char(c));
    }
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) append(out, lower_char(decode(s, pos)));
  return out;
}

}  // namespace hive::chat_template::utf8
