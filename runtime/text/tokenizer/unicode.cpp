#include "runtime/text/tokenizer/unicode.hpp"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "base/error.hpp"
#include "runtime/text/utf8.hpp"

namespace hive::tokenizer {
namespace {

utf8proc_option_t options_for(NormalForm form) {
  switch (form) {
    case NormalForm::NFC:
      return static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    case NormalForm::NFD:
      return static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE);
    case NormalForm::NFKC:
      return static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
    case NormalForm::NFKD:
      return static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
  }
  return UTF8PROC_STABLE;
}

void append_normalized(std::string& out, std::string_view segment, utf8proc_option_t options) {
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t length =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(segment.data()),
                   static_cast<utf8proc_ssize_t>(segment.size()), &mapped, options);
  const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owner(mapped, &std::free);
  check(length >= 0, "unicode normalization failed: ", utf8proc_errmsg(length));
  out.append(reinterpret_cast<const char*>(mapped), static_cast<std::size_t>(length));
}

bool is_ascii(char c) {
  return static_cast<unsigned char>(c) < 0x80;
}

bool in_category(char32_t c, std::initializer_list<utf8proc_category_t> categories) {
  const utf8proc_category_t category = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  for (const utf8proc_category_t wanted : categories)
    if (category == wanted) return true;
  return false;
}

}  // namespace

std::string normalize(std::string_view text, NormalForm form) {
  const utf8proc_option_t options = options_for(form);
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t first_non_ascii = pos;
    while (first_non_ascii < text.size() && is_ascii(text[first_non_ascii])) ++first_non_ascii;
    if (first_non_ascii == text.size()) {
      out.append(text.substr(pos));
      break;
    }
    // The ASCII character just before may be a starter that composes with
    // the marks that follow it ("e" + U+0301), so it joins the segment.
    const std::size_t segment_start = first_non_ascii > pos ? first_non_ascii - 1 : pos;
    std::size_t segment_end = first_non_ascii;
    while (segment_end < text.size() && !is_ascii(text[segment_end])) ++segment_end;
    out.append(text.substr(pos, segment_start - pos));
    append_normalized(out, text.substr(segment_start, segment_end - segment_start), options);
    pos = segment_end;
  }
  return out;
}

std::string to_lowercase(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  while (pos < text.size()) {
    const char c = text[pos];
    if (is_ascii(c)) {
      out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
      ++pos;
      continue;
    }
    const char32_t code_point = utf8::next_code_point(text, pos);
    if (code_point == 0x130) {  // the one unconditional multi-character lowercase mapping
      out.append("i\xCC\x87");
      continue;
    }
    utf8::append(out,
                static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(code_point))));
  }
  return out;
}

bool is_whitespace(char32_t c) {
  if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D);
  if (c < 0x85) return false;
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_numeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return in_category(c, {UTF8PROC_CATEGORY_ND, UTF8PROC_CATEGORY_NL, UTF8PROC_CATEGORY_NO});
}

bool is_word_char(char32_t c) {
  if (c < 0x80)
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  if (c == 0x200C || c == 0x200D) return true;  // Join_Control
  // Other_Alphabetic symbols outside the letter and mark categories: circled
  // and squared Latin letters.
  if ((c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) ||
      (c >= 0x1F150 && c <= 0x1F169) || (c >= 0x1F170 && c <= 0x1F189))
    return true;
  return in_category(
      c, {UTF8PROC_CATEGORY_LU, UTF8PROC_CATEGORY_LL, UTF8PROC_CATEGORY_LT, UTF8PROC_CATEGORY_LM,
          UTF8PROC_CATEGORY_LO, UTF8PROC_CATEGORY_NL, UTF8PROC_CATEGORY_MN, UTF8PROC_CATEGORY_MC,
          UTF8PROC_CATEGORY_ME, UTF8PROC_CATEGORY_ND, UTF8PROC_CATEGORY_PC});
}

bool is_combining_mark(char32_t c) {
  if (c < 0x300) return false;
  return in_category(c, {UTF8PROC_CATEGORY_MN, UTF8PROC_CATEGORY_MC, UTF8PROC_CATEGORY_ME});
}

}  // namespace hive::tokenizer
