#pragma once
// A recursive-descent parser with jinja2's grammar and precedence, lowest
// first:
//   conditional (a if b else c) > or > and > not > comparison (== != < <= > >=
//   in, not in; chained) > + - > ~ > * / // % > ** > unary - + > primary with
//   postfix .attr [key] [a:b:c] (call), then | filter and `is` test.
// Unknown or unsupported tags, filters and tests fail here, at load time,
// with their line and column, never silently at render time.
#include <initializer_list>
#include <string_view>
#include <vector>

#include "runtime/text/jinja/ast.hpp"
#include "runtime/text/jinja/lexer.hpp"

namespace hive::chat_template {

Body parse_template(const Source& source);

class Parser {
 public:
  Parser(const Source& source, std::vector<Token> tokens);
  Body parse();

 private:
  // statements (parser_statements.cpp)
  Body subparse(std::initializer_list<std::string_view> end_tags);
  Body parse_body(std::initializer_list<std::string_view> end_tags, bool drop_end_tag);
  StmtPtr parse_statement();
  StmtPtr parse_for(size_t offset);
  StmtPtr parse_if(size_t offset);
  StmtPtr parse_set(size_t offset);
  StmtPtr parse_macro(size_t offset);
  StmtPtr parse_with(size_t offset);
  StmtPtr parse_filter_block(size_t offset);
  Target parse_target(bool allow_namespace, std::string_view end_name);

  // expressions (parser_expressions.cpp)
  ExprPtr parse_tuple(bool with_condexpr, std::string_view end_name = "",
                      bool explicit_parentheses = false);
  ExprPtr parse_expression();
  ExprPtr parse_conditional();
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_sum();
  ExprPtr parse_concat();
  ExprPtr parse_product();
  ExprPtr parse_power();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_and_test(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_slice_or_key(size_t offset, ExprPtr object);
  ExprPtr parse_sequence(size_t offset, bool tuple, char close);
  ExprPtr parse_mapping(size_t offset);
  ExprPtr parse_test(ExprPtr node);
  FilterCall parse_filter_call();
  Arguments parse_arguments();

  // token stream
  const Token& current() const { return tokens_[pos_]; }
  const Token& peek() const { return tokens_[pos_ + 1 < tokens_.size() ? pos_ + 1 : pos_]; }
  const Token& advance();
  bool at_op(std::string_view op) const;
  bool at_name(std::string_view name) const;
  bool skip_op(std::string_view op);
  bool skip_name(std::string_view name);
  void expect_op(std::string_view op);
  void expect_name(std::string_view name);
  void expect(TokenType type);
  std::string expect_identifier();
  bool at_tuple_end(std::string_view end_name) const;
  std::string describe(const Token& token) const;
  template <class... Parts>
  [[noreturn]] void fail_here(const Parts&... parts) const {
    source_.fail_at(current().offset, parts...);
  }

  // Counts the parser's recursion through nested expressions and blocks
  // (three steps per parenthesis level); past kMaxNesting the template is
  // refused instead of recursing until the stack runs out. jinja2 itself
  // stops at Python's recursion limit, near 80 parentheses deep.
  class Nesting {
   public:
    explicit Nesting(Parser& parser);
    ~Nesting() { --parser_.nesting_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;

   private:
    Parser& parser_;
  };
  static constexpr int kMaxNesting = 300;

  const Source& source_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int loop_depth_ = 0;                                    // for break/continue outside a loop
  int nesting_ = 0;                                       // see Nesting
  std::vector<std::vector<std::string_view>> open_tags_;  // end tags expected, innermost last
};

}  // namespace hive::chat_template
