#pragma once
// UTF-8 helpers. Template strings are stored as UTF-8 bytes, but Python (and
// so jinja2) counts, indexes, slices and strips by code point; these helpers
// give the code-point view where a template can observe the difference.
#include <string>
#include <string_view>

namespace hive::chat_template::utf8 {

// Decodes the code point at s[pos] and advances pos past it. A malformed byte
// decodes to a lone surrogate that append() turns back into the same byte.
char32_t decode(std::string_view s, size_t& pos);
void append(std::string& out, char32_t code_point);

std::u32string to_u32(std::string_view s);
std::string from_u32(std::u32string_view s);
size_t length(std::string_view s);

// Python's str.isspace(), which is also what `\s` and str.strip() use.
bool is_space(char32_t c);

// Unicode case mapping as Python's str.upper()/lower() do it (the C.UTF-8
// locale's simple mapping, plus the one common full mapping: 'ß' -> "SS").
std::string upper(std::string_view s);
std::string lower(std::string_view s);
char32_t upper_char(char32_t c);
char32_t lower_char(char32_t c);
bool is_upper_char(char32_t c);
bool is_lower_char(char32_t c);
bool is_alpha_char(char32_t c);
bool is_digit_char(char32_t c);

}  // namespace hive::chat_template::utf8
