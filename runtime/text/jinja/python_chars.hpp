#pragma once
// Python's str character semantics, which jinja2 templates observe: what
// counts as white space (str.isspace(), `\s`, str.strip()) and case mapping.
#include <string>
#include <string_view>

namespace hive::chat_template::py {

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

}  // namespace hive::chat_template::py
