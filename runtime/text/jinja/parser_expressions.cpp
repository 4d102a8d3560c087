// The expression half of the parser, one function per precedence level,
// following jinja2's parser.py so that ambiguous-looking templates group the
// way jinja2 groups them (`'a' + x | trim` filters x alone; `-x | abs` is
// (-x) | abs; `2 ** 3 ** 2` is (2 ** 3) ** 2).
#include <optional>

#include "runtime/text/jinja/parser.hpp"

namespace hive::chat_template {
namespace {

template <class Node>
ExprPtr make_expr(size_t offset, Node node) {
  return std::make_unique<Expr>(Expr{offset, std::move(node)});
}

ExprPtr literal(size_t offset, Value value) {
  return make_expr(offset, node::Literal{std::move(value)});
}

}  // namespace

// Comma-separated expressions; more than one (or a trailing comma) makes a
// tuple. with_condexpr=false leaves `if` to the enclosing statement.
ExprPtr Parser::parse_tuple(bool with_condexpr, std::string_view end_name,
                            bool explicit_parentheses) {
  const size_t offset = current().offset;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) expect_op(",");
    if (at_tuple_end(end_name)) break;
    items.push_back(with_condexpr ? parse_expression() : parse_or());
    if (!at_op(",")) break;
    is_tuple = true;
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items.front());
    if (!explicit_parentheses) fail_here("expected an expression, got ", describe(current()));
  }
  return make_expr(offset, node::Sequence{std::move(items), /*tuple=*/true});
}

ExprPtr Parser::parse_expression() {
  return parse_conditional();
}

ExprPtr Parser::parse_conditional() {
  const Nesting nesting(*this);
  ExprPtr then = parse_or();
  while (at_name("if")) {
    const size_t offset = advance().offset;
    ExprPtr condition = parse_or();
    ExprPtr otherwise = skip_name("else") ? parse_conditional() : nullptr;
    then = make_expr(
        offset, node::Conditional{std::move(condition), std::move(then), std::move(otherwise)});
  }
  return then;
}

ExprPtr Parser::parse_or() {
  ExprPtr left = parse_and();
  while (at_name("or")) {
    const size_t offset = advance().offset;
    left = make_expr(offset, node::Logical{false, std::move(left), parse_and()});
  }
  return left;
}

ExprPtr Parser::parse_and() {
  ExprPtr left = parse_not();
  while (at_name("and")) {
    const size_t offset = advance().offset;
    left = make_expr(offset, node::Logical{true, std::move(left), parse_not()});
  }
  return left;
}

ExprPtr Parser::parse_not() {
  const Nesting nesting(*this);
  if (!at_name("not")) return parse_compare();
  const size_t offset = advance().offset;
  return make_expr(offset, node::Unary{UnaryOp::logical_not, parse_not()});
}

ExprPtr Parser::parse_compare() {
  const size_t offset = current().offset;
  ExprPtr first = parse_sum();
  std::vector<std::pair<CompareOp, ExprPtr>> rest;
  static const std::pair<std::string_view, CompareOp> kOps[] = {
      {"==", CompareOp::eq}, {"!=", CompareOp::ne}, {"<", CompareOp::lt},
      {"<=", CompareOp::le}, {">", CompareOp::gt},  {">=", CompareOp::ge}};
  while (true) {
    std::optional<CompareOp> op;
    for (const auto& [text, compare_op] : kOps) {
      if (at_op(text)) op = compare_op;
    }
    if (op) {
      advance();
    } else if (skip_name("in")) {
      op = CompareOp::in;
    } else if (at_name("not") && peek().type == TokenType::name && peek().text == "in") {
      advance(), advance();
      op = CompareOp::not_in;
    } else {
      break;
    }
    rest.emplace_back(*op, parse_sum());
  }
  if (rest.empty()) return first;
  return make_expr(offset, node::Compare{std::move(first), std::move(rest)});
}

ExprPtr Parser::parse_sum() {
  ExprPtr left = parse_concat();
  while (at_op("+") || at_op("-")) {
    const Token& op = advance();
    const BinaryOp binary = op.text == "+" ? BinaryOp::add : BinaryOp::subtract;
    left = make_expr(op.offset, node::Binary{binary, std::move(left), parse_concat()});
  }
  return left;
}

ExprPtr Parser::parse_concat() {
  const size_t offset = current().offset;
  std::vector<ExprPtr> parts;
  parts.push_back(parse_product());
  while (skip_op("~")) parts.push_back(parse_product());
  if (parts.size() == 1) return std::move(parts.front());
  return make_expr(offset, node::Concat{std::move(parts)});
}

ExprPtr Parser::parse_product() {
  ExprPtr left = parse_power();
  while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
    const Token& op = advance();
    const BinaryOp binary = op.text == "*"    ? BinaryOp::multiply
                            : op.text == "/"  ? BinaryOp::divide
                            : op.text == "//" ? BinaryOp::floor_divide
                                              : BinaryOp::modulo;
    left = make_expr(op.offset, node::Binary{binary, std::move(left), parse_power()});
  }
  return left;
}

ExprPtr Parser::parse_power() {
  ExprPtr left = parse_unary(true);
  while (at_op("**")) {
    const size_t offset = advance().offset;
    left = make_expr(offset, node::Binary{BinaryOp::power, std::move(left), parse_unary(true)});
  }
  return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  const Nesting nesting(*this);
  const size_t offset = current().offset;
  ExprPtr node;
  if (skip_op("-")) {
    node = make_expr(offset, node::Unary{UnaryOp::negate, parse_unary(false)});
  } else if (skip_op("+")) {
    node = make_expr(offset, node::Unary{UnaryOp::plus, parse_unary(false)});
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  return with_filter ? parse_filter_and_test(std::move(node)) : std::move(node);
}

ExprPtr Parser::parse_primary() {
  const Token& token = current();
  const size_t offset = token.offset;
  switch (token.type) {
    case TokenType::name: {
      const std::string name = advance().text;
      if (name == "true" || name == "True") return literal(offset, Value::boolean(true));
      if (name == "false" || name == "False") return literal(offset, Value::boolean(false));
      if (name == "none" || name == "None") return literal(offset, Value::none());
      return make_expr(offset, node::Name{name});
    }
    case TokenType::string: {
      std::string text;  // adjacent literals join, as in Python
      while (current().type == TokenType::string) text += advance().text;
      return literal(offset, Value::string(std::move(text)));
    }
    case TokenType::integer:
      return literal(offset, Value::integer(advance().integer));
    case TokenType::floating:
      return literal(offset, Value::floating(advance().floating));
    default:
      break;
  }
  if (skip_op("(")) {
    ExprPtr inner = parse_tuple(true, "", /*explicit_parentheses=*/true);
    expect_op(")");
    return inner;
  }
  if (skip_op("[")) return parse_sequence(offset, false, ']');
  if (skip_op("{")) return parse_mapping(offset);
  fail_here("unexpected ", describe(token));
}

ExprPtr Parser::parse_sequence(size_t offset, bool tuple, char close) {
  std::vector<ExprPtr> items;
  const std::string closing(1, close);
  while (!at_op(closing)) {
    if (!items.empty()) expect_op(",");
    if (at_op(closing)) break;
    items.push_back(parse_expression());
  }
  expect_op(closing);
  return make_expr(offset, node::Sequence{std::move(items), tuple});
}

ExprPtr Parser::parse_mapping(size_t offset) {
  std::vector<std::pair<ExprPtr, ExprPtr>> entries;
  while (!at_op("}")) {
    if (!entries.empty()) expect_op(",");
    if (at_op("}")) break;
    ExprPtr key = parse_expression();
    expect_op(":");
    entries.emplace_back(std::move(key), parse_expression());
  }
  expect_op("}");
  return make_expr(offset, node::Mapping{std::move(entries)});
}

}  // namespace hive::chat_template
