#include "runtime/text/jinja/parser.hpp"

namespace hive::chat_template {

Body parse_template(const Source& source) {
  return Parser(source, tokenize(source)).parse();
}

Parser::Nesting::Nesting(Parser& parser) : parser_(parser) {
  if (++parser_.nesting_ > kMaxNesting) {
    parser_.fail_here("expressions and blocks are nested too deeply");
  }
}

Parser::Parser(const Source& source, std::vector<Token> tokens)
    : source_(source), tokens_(std::move(tokens)) {}

Body Parser::parse() {
  Body body = subparse({});
  if (current().type != TokenType::eof) fail_here("unexpected ", describe(current()));
  return body;
}

// Template text, `{{ expr }}` and statements until one of end_tags opens a
// block tag; the stream is then left on that tag's name.
Body Parser::subparse(std::initializer_list<std::string_view> end_tags) {
  Body body;
  while (current().type != TokenType::eof) {
    const Token& token = current();
    if (token.type == TokenType::data) {
      body.push_back(std::make_unique<Stmt>(Stmt{token.offset, stmt::Text{token.text}}));
      advance();
    } else if (token.type == TokenType::variable_begin) {
      const size_t offset = advance().offset;
      ExprPtr value = parse_tuple(/*with_condexpr=*/true);
      expect(TokenType::variable_end);
      body.push_back(std::make_unique<Stmt>(Stmt{offset, stmt::Print{std::move(value)}}));
    } else if (token.type == TokenType::block_begin) {
      advance();
      for (std::string_view end : end_tags) {
        if (at_name(end)) return body;
      }
      body.push_back(parse_statement());
      expect(TokenType::block_end);
    } else {
      fail_here("unexpected ", describe(token));
    }
  }
  return body;
}

// A statement's body: the rest of its tag, then statements up to an end tag.
Body Parser::parse_body(std::initializer_list<std::string_view> end_tags, bool drop_end_tag) {
  const Nesting nesting(*this);
  skip_op(":");  // jinja2 accepts `{% for x in y: %}` for Python habits
  expect(TokenType::block_end);
  open_tags_.emplace_back(end_tags.begin(), end_tags.end());
  Body body = subparse(end_tags);
  open_tags_.pop_back();
  if (current().type == TokenType::eof) {
    std::string expected;
    for (std::string_view end : end_tags)
      expected += (expected.empty() ? "'" : " or '") + std::string(end) + "'";
    fail_here("unexpected end of template, expected ", expected);
  }
  if (drop_end_tag) advance();
  return body;
}

const Token& Parser::advance() {
  const Token& token = tokens_[pos_];
  if (pos_ + 1 < tokens_.size()) ++pos_;
  return token;
}

bool Parser::at_op(std::string_view op) const {
  return current().type == TokenType::op && current().text == op;
}

bool Parser::at_name(std::string_view name) const {
  return current().type == TokenType::name && current().text == name;
}

bool Parser::skip_op(std::string_view op) {
  if (!at_op(op)) return false;
  advance();
  return true;
}

bool Parser::skip_name(std::string_view name) {
  if (!at_name(name)) return false;
  advance();
  return true;
}

void Parser::expect_op(std::string_view op) {
  if (!skip_op(op)) fail_here("expected '", op, "', got ", describe(current()));
}

void Parser::expect_name(std::string_view name) {
  if (!skip_name(name)) fail_here("expected '", name, "', got ", describe(current()));
}

void Parser::expect(TokenType type) {
  if (current().type != type) {
    Token wanted;
    wanted.type = type;
    fail_here("expected ", describe(wanted), ", got ", describe(current()));
  }
  advance();
}

std::string Parser::expect_identifier() {
  if (current().type != TokenType::name) fail_here("expected a name, got ", describe(current()));
  return advance().text;
}

bool Parser::at_tuple_end(std::string_view end_name) const {
  const TokenType type = current().type;
  if (type == TokenType::variable_end || type == TokenType::block_end || at_op(")")) return true;
  return !end_name.empty() && at_name(end_name);
}

std::string Parser::describe(const Token& token) const {
  switch (token.type) {
    case TokenType::data:
      return "template text";
    case TokenType::variable_begin:
      return "'{{'";
    case TokenType::variable_end:
      return "end of print statement '}}'";
    case TokenType::block_begin:
      return "'{%'";
    case TokenType::block_end:
      return "end of statement block '%}'";
    case TokenType::name:
    case TokenType::op:
      return "'" + token.text + "'";
    case TokenType::string:
      return "a string";
    case TokenType::integer:
    case TokenType::floating:
      return "a number";
    case TokenType::eof:
      return "end of template";
  }
  return "token";
}

}  // namespace hive::chat_template
