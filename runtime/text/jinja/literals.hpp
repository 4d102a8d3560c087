#pragma once
// Scanning the literals inside a tag, with Python's rules: numbers (1_000,
// 0x1F, 1.5e-3) and quoted strings with Python escapes (\n, \x41, \u00e9).
// Each scanner returns the number of bytes it consumed, or 0 when the text
// at pos is not that kind of literal.
#include <string>
#include <string_view>

#include "runtime/text/jinja/lexer.hpp"

namespace hive::chat_template {

// Sets token.type to integer or floating and its value.
size_t scan_number(std::string_view text, size_t pos, Token& token);
// Sets token.text to the decoded value; throws on a malformed escape.
size_t scan_string(const Source& source, size_t pos, Token& token);
size_t scan_name(std::string_view text, size_t pos);
// The longest operator at pos (Python's list: ** // == != <= >= and singles).
size_t scan_operator(std::string_view text, size_t pos);

}  // namespace hive::chat_template
