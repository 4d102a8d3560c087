#pragma once
// Unicode normalization, case mapping and character classes, over utf8proc.
// The classes follow what Hugging Face `tokenizers` uses (Rust's char and
// regex definitions), so that splitting and stripping agree with it.
#include <string>
#include <string_view>

namespace hive::tokenizer {

enum class NormalForm { NFC, NFD, NFKC, NFKD };

// text must be valid UTF-8. ASCII runs are copied as they are: no ASCII
// character changes under any form or combines with what precedes it, so
// only the stretches around non-ASCII characters go through utf8proc.
std::string normalize(std::string_view text, NormalForm form);

// Full lowercase mapping per character, as Rust's char::to_lowercase (no
// context-dependent rules such as the final sigma).
std::string to_lowercase(std::string_view text);

bool is_whitespace(char32_t c);      // the White_Space property (Rust char::is_whitespace, \s)
bool is_numeric(char32_t c);         // general categories Nd, Nl, No (Rust char::is_numeric)
bool is_word_char(char32_t c);       // Rust regex \w: alphabetic, marks, Nd, Pc, joiners
bool is_combining_mark(char32_t c);  // general categories Mn, Mc, Me

}  // namespace hive::tokenizer
