#include "runtime/text/jinja/lexer.hpp"

#include "runtime/text/jinja/literals.hpp"
#include "runtime/text/jinja/python_chars.hpp"
#include "runtime/text/utf8.hpp"

namespace hive::chat_template {
namespace {

enum class TagKind { variable, block, comment, raw };

bool starts_with(std::string_view text, size_t pos, std::string_view prefix) {
  return text.substr(pos, prefix.size()) == prefix;
}

// Skips Python whitespace (\s) from pos.
size_t skip_space(std::string_view text, size_t pos) {
  while (pos < text.size()) {
    size_t next = pos;
    if (!py::is_space(utf8::decode(text, next))) break;
    pos = next;
  }
  return pos;
}

// True when text is non-empty and all Python whitespace.
bool all_space(std::string_view text) {
  return !text.empty() && skip_space(text, 0) == text.size();
}

std::string_view rstrip(std::string_view text) {
  const std::u32string wide = utf8::to_u32(text);
  size_t keep = wide.size();
  while (keep > 0 && py::is_space(wide[keep - 1])) --keep;
  size_t bytes = 0;
  for (size_t i = 0; i < keep; ++i) utf8::decode(text, bytes);
  return text.substr(0, bytes);
}

class Lexer {
 public:
  explicit Lexer(const Source& source) : source_(source), text_(source.text()) {}

  std::vector<Token> run() {
    while (pos_ < text_.size()) lex_text_and_tag();
    push(TokenType::eof, "", text_.size());
    return std::move(tokens_);
  }

 private:
  void push(TokenType type, std::string text, size_t offset) {
    Token token;
    token.type = type;
    token.text = std::move(text);
    token.offset = offset;
    tokens_.push_back(std::move(token));
  }

  // One step of the root state: the text up to the next tag, then the tag.
  void lex_text_and_tag() {
    size_t start = pos_;
    TagKind kind = TagKind::variable;
    while ((start = text_.find('{', start)) != std::string_view::npos) {
      const char next = start + 1 < text_.size() ? text_[start + 1] : '\0';
      if (next == '{' || next == '%' || next == '#') {
        kind = next == '{' ? TagKind::variable : next == '%' ? TagKind::block : TagKind::comment;
        break;
      }
      ++start;
    }
    if (start == std::string_view::npos) {
      push(TokenType::data, std::string(text_.substr(pos_)), pos_);
      pos_ = text_.size();
      return;
    }
    const char sign = start + 2 < text_.size() ? text_[start + 2] : '\0';
    const bool has_sign = sign == '-' || sign == '+';
    size_t raw_body = 0;
    if (kind == TagKind::block && (raw_body = raw_begin_end(start, has_sign)) != 0)
      kind = TagKind::raw;
    const std::string_view data =
        strip_before(text_.substr(pos_, start - pos_), has_sign ? sign : '\0', kind);
    if (!data.empty()) push(TokenType::data, std::string(data), pos_);
    pos_ = start + 2 + (has_sign ? 1 : 0);
    switch (kind) {
      case TagKind::comment:
        return lex_comment(start);
      case TagKind::raw:
        pos_ = raw_body;
        line_starting_ = text_[raw_body - 1] == '\n';
        return lex_raw(start);
      case TagKind::variable:
        return lex_tag(TokenType::variable_begin, start);
      case TagKind::block:
        return lex_tag(TokenType::block_begin, start);
    }
  }

  // The whitespace rules for the text before a tag (see lexer.hpp).
  std::string_view strip_before(std::string_view data, char sign, TagKind kind) const {
    if (sign == '-') return rstrip(data);
    if (sign == '+' || kind == TagKind::variable) return data;
    const size_t line_start = data.rfind('\n') == std::string_view::npos ? 0 : data.rfind('\n') + 1;
    if ((line_start > 0 || line_starting_) && all_space(data.substr(line_start))) {
      return data.substr(0, line_start);
    }
    return data;
  }

  // `{% raw %}` or `{%- raw -%}`: where its body starts, or 0 if this block
  // tag is not `raw`. jinja2 applies no trim_blocks after it.
  size_t raw_begin_end(size_t start, bool has_sign) const {
    size_t p = skip_space(text_, start + 2 + (has_sign ? 1 : 0));
    if (!starts_with(text_, p, "raw")) return 0;
    p = skip_space(text_, p + 3);
    if (starts_with(text_, p, "-%}")) return skip_space(text_, p + 3);
    return starts_with(text_, p, "%}") ? p + 2 : 0;
  }

  // After `%}` or `#}` (at end): trim_blocks, `-` and `+` decide how much
  // following whitespace goes; returns where the next text starts.
  size_t after_block_end(size_t end, char sign) {
    size_t next = end;
    if (sign == '-') {
      next = skip_space(text_, end);
    } else if (sign != '+' && next < text_.size() && text_[next] == '\n') {
      ++next;
    }
    line_starting_ = next > 0 && text_[next - 1] == '\n';
    return next;
  }

  void lex_comment(size_t start) {
    const size_t close = text_.find("#}", pos_);
    if (close == std::string_view::npos) source_.fail_at(start, "missing end of comment tag");
    const char sign = close > pos_ ? text_[close - 1] : '\0';
    pos_ = after_block_end(close + 2, sign == '-' || sign == '+' ? sign : '\0');
  }

  void lex_raw(size_t start) {
    for (size_t p = pos_; (p = text_.find("{%", p)) != std::string_view::npos; ++p) {
      const char sign = p + 2 < text_.size() ? text_[p + 2] : '\0';
      const bool has_sign = sign == '-' || sign == '+';
      size_t q = skip_space(text_, p + 2 + (has_sign ? 1 : 0));
      if (!starts_with(text_, q, "endraw")) continue;
      q = skip_space(text_, q + 6);
      const char end_sign =
          q < text_.size() && (text_[q] == '-' || text_[q] == '+') ? text_[q] : '\0';
      if (!starts_with(text_, q + (end_sign ? 1 : 0), "%}")) continue;
      const std::string_view body =
          strip_before(text_.substr(pos_, p - pos_), has_sign ? sign : '\0', TagKind::raw);
      if (!body.empty()) push(TokenType::data, std::string(body), pos_);
      pos_ = after_block_end(q + (end_sign ? 3 : 2), end_sign);
      return;
    }
    source_.fail_at(start, "missing end of raw directive");
  }

  void lex_tag(TokenType begin, size_t start) {
    push(begin, "", start);
    const bool block = begin == TokenType::block_begin;
    std::string balance;  // the closing brackets still expected
    while (true) {
      pos_ = skip_space(text_, pos_);
      if (pos_ >= text_.size())
        source_.fail_at(start, "unexpected end of template, the tag is not closed");
      if (balance.empty() && lex_tag_end(block)) return;
      lex_token(balance);
    }
  }

  bool lex_tag_end(bool block) {
    const size_t at = pos_;
    if (!block) {
      const bool strip = starts_with(text_, pos_, "-}}");
      if (!strip && !starts_with(text_, pos_, "}}")) return false;
      pos_ = strip ? skip_space(text_, pos_ + 3) : pos_ + 2;
      line_starting_ = pos_ > 0 && text_[pos_ - 1] == '\n';
      push(TokenType::variable_end, "", at);
      return true;
    }
    const char sign = text_[pos_] == '-' || text_[pos_] == '+' ? text_[pos_] : '\0';
    if (!starts_with(text_, pos_ + (sign ? 1 : 0), "%}")) return false;
    pos_ = after_block_end(pos_ + (sign ? 3 : 2), sign);
    push(TokenType::block_end, "", at);
    return true;
  }

  void lex_token(std::string& balance) {
    Token token;
    token.offset = pos_;
    size_t length = 0;
    if ((length = scan_number(text_, pos_, token)) != 0) {
    } else if ((length = scan_name(text_, pos_)) != 0) {
      token.type = TokenType::name;
      token.text = std::string(text_.substr(pos_, length));
    } else if (text_[pos_] == '\'' || text_[pos_] == '"') {
      length = scan_string(source_, pos_, token);
    } else if ((length = scan_operator(text_, pos_)) != 0) {
      token.type = TokenType::op;
      token.text = std::string(text_.substr(pos_, length));
      track_brackets(token, balance);
    } else {
      size_t next = pos_;
      const char32_t c = utf8::decode(text_, next);
      std::string shown;
      utf8::append(shown, c);
      source_.fail_at(pos_, "unexpected character '", shown, "'");
    }
    pos_ += length;
    tokens_.push_back(std::move(token));
  }

  void track_brackets(const Token& token, std::string& balance) const {
    const char c = token.text.size() == 1 ? token.text[0] : '\0';
    if (c == '(' || c == '[' || c == '{') balance += c == '(' ? ')' : c == '[' ? ']' : '}';
    if (c != ')' && c != ']' && c != '}') return;
    if (balance.empty()) source_.fail_at(token.offset, "unexpected '", c, "'");
    if (balance.back() != c)
      source_.fail_at(token.offset, "unexpected '", c, "', expected '", balance.back(), "'");
    balance.pop_back();
  }

  const Source& source_;
  std::string_view text_;
  size_t pos_ = 0;
  bool line_starting_ = true;  // the last tag's end consumed a newline
  std::vector<Token> tokens_;
};

}  // namespace

std::string normalize_template_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r') {
      out += '\n';
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
    } else {
      out += text[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::vector<Token> tokenize(const Source& source) {
  return Lexer(source).run();
}

}  // namespace hive::chat_template
