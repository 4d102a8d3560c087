// The postfix half of the parser: `.attr`, `[key]`, `[a:b:c]`, calls,
// `| filter(args)` and `is test args`. Filter and test names are checked
// here, so an unknown or unsupported one fails when the template loads.
#include "runtime/text/jinja/filters.hpp"
#include "runtime/text/jinja/jinja_tests.hpp"
#include "runtime/text/jinja/parser.hpp"

namespace hive::chat_template {
namespace {

template <class Node>
ExprPtr make_expr(size_t offset, Node node) {
  return std::make_unique<Expr>(Expr{offset, std::move(node)});
}

}  // namespace

ExprPtr Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (at_op(".") || at_op("[")) {
      node = parse_subscript(std::move(node));
    } else if (at_op("(")) {
      const size_t offset = node->offset;  // errors point at what is called
      node = make_expr(offset, node::Call{std::move(node), parse_arguments()});
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_filter_and_test(ExprPtr node) {
  while (true) {
    if (skip_op("|")) {
      const size_t offset = node->offset;
      node = make_expr(offset, node::Filter{std::move(node), parse_filter_call()});
    } else if (at_name("is")) {
      node = parse_test(std::move(node));
    } else if (at_op("(")) {
      const size_t offset = node->offset;  // errors point at what is called
      node = make_expr(offset, node::Call{std::move(node), parse_arguments()});
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
  const Token& token = advance();
  const size_t offset = token.offset;
  if (token.text == ".") {
    if (current().type == TokenType::name) {
      return make_expr(offset, node::Attribute{std::move(node), advance().text});
    }
    if (current().type != TokenType::integer) fail_here("expected name or number after '.'");
    ExprPtr key = make_expr(current().offset, node::Literal{Value::integer(advance().integer)});
    return make_expr(offset, node::Item{std::move(node), std::move(key)});
  }
  ExprPtr result = parse_slice_or_key(offset, std::move(node));
  expect_op("]");
  return result;
}

// The inside of `[...]`: a key, or start:stop:step with any part omitted.
ExprPtr Parser::parse_slice_or_key(size_t offset, ExprPtr object) {
  ExprPtr start;
  if (!at_op(":")) {
    start = parse_expression();
    if (at_op(",")) fail_here("unsupported: tuple subscripts (x[a, b])");
    if (!at_op(":")) return make_expr(offset, node::Item{std::move(object), std::move(start)});
  }
  advance();  // the first ':'
  const auto bound = [&]() -> ExprPtr {
    return at_op(":") || at_op("]") ? nullptr : parse_expression();
  };
  ExprPtr stop = bound();
  ExprPtr step = skip_op(":") ? bound() : nullptr;
  return make_expr(
      offset, node::Slice{std::move(object), std::move(start), std::move(stop), std::move(step)});
}

ExprPtr Parser::parse_test(ExprPtr node) {
  const size_t offset = advance().offset;  // 'is'
  const bool negated = skip_name("not");
  const size_t name_offset = current().offset;
  std::string name = expect_identifier();
  while (skip_op(".")) name.append(".").append(expect_identifier());
  if (find_test(name) == nullptr) {
    source_.fail_at(name_offset,
                    is_jinja_builtin_test(name) ? "unsupported test '" : "unknown test '", name,
                    "'");
  }
  Arguments args;
  const TokenType type = current().type;
  const bool bare_argument =
      (type == TokenType::name || type == TokenType::string || type == TokenType::integer ||
       type == TokenType::floating || at_op("[") || at_op("{")) &&
      !at_name("else") && !at_name("or") && !at_name("and");
  if (at_op("(")) {
    args = parse_arguments();
  } else if (bare_argument) {
    if (at_name("is")) fail_here("you cannot chain multiple tests with is");
    args.positional.push_back(parse_postfix(parse_primary()));
  }
  ExprPtr test = make_expr(offset, node::Test{std::move(node), std::move(name), std::move(args)});
  if (!negated) return test;
  return make_expr(offset, node::Unary{UnaryOp::logical_not, std::move(test)});
}

FilterCall Parser::parse_filter_call() {
  FilterCall call;
  call.offset = current().offset;
  call.name = expect_identifier();
  while (skip_op(".")) call.name.append(".").append(expect_identifier());
  if (find_filter(call.name) == nullptr) {
    source_.fail_at(
        call.offset,
        is_jinja_builtin_filter(call.name) ? "unsupported filter '" : "unknown filter '", call.name,
        "'");
  }
  if (at_op("(")) call.args = parse_arguments();
  return call;
}

Arguments Parser::parse_arguments() {
  expect_op("(");
  Arguments args;
  bool first = true;
  while (!at_op(")")) {
    if (!first) {
      expect_op(",");
      if (at_op(")")) break;  // trailing comma
    }
    first = false;
    if (at_op("*") || at_op("**")) fail_here("unsupported: *args and **kwargs in calls");
    if (current().type == TokenType::name && peek().type == TokenType::op && peek().text == "=") {
      std::string name = advance().text;
      advance();
      args.keywords.push_back(Keyword{std::move(name), parse_expression()});
    } else {
      if (!args.keywords.empty()) fail_here("positional argument follows keyword argument");
      args.positional.push_back(parse_expression());
    }
  }
  expect_op(")");
  return args;
}

}  // namespace hive::chat_template
