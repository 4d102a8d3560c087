#pragma once
// Splits template text into tokens exactly as jinja2's lexer does in the
// environment transformers uses (trim_blocks=True, lstrip_blocks=True):
//
//   text {%- tag -%} text {{ expr }} {# comment #} {% raw %}...{% endraw %}
//
// - `{%-` / `{{-` / `{#-` strip all whitespace before the tag, `-%}` / `-}}`
//   / `-#}` all whitespace after it.
// - trim_blocks: the first newline after `%}` or `#}` is dropped (not after
//   `}}`, and not after `{% raw %}`); `+%}` keeps it.
// - lstrip_blocks: spaces and tabs between the start of a line and `{%` or
//   `{#` are dropped; `{%+` keeps them.
// - One trailing newline of the template is dropped (keep_trailing_newline
//   is off) and \r\n and \r read as \n.
#include <string>
#include <string_view>
#include <vector>

#include "runtime/text/jinja/source.hpp"

namespace hive::chat_template {

enum class TokenType {
  data,  // literal template text
  variable_begin,
  variable_end,
  block_begin,
  block_end,
  name,
  string,
  integer,
  floating,
  op,  // operator or punctuation; text holds it ("==", "(", "|", ...)
  eof,
};

struct Token {
  TokenType type = TokenType::eof;
  std::string text;   // data, name, operator, or a string literal's decoded value
  size_t offset = 0;  // into the normalised source, for error locations
  int64_t integer = 0;
  double floating = 0.0;
};

// Newline normalisation and the trailing-newline rule; the Source a
// template is parsed from holds this text so that offsets line up.
std::string normalize_template_text(std::string_view text);

std::vector<Token> tokenize(const Source& source);

}  // namespace hive::chat_template
