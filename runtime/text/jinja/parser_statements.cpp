// The statement half of the parser: {% for %}, {% if %}, {% set %}, macros,
// filter and with blocks, loop controls and transformers' generation tag.
#include <algorithm>
#include <array>

#include "runtime/text/jinja/parser.hpp"

namespace hive::chat_template {
namespace {

// jinja2 tags that need a template loader, autoescaping or the `do`
// extension, none of which a chat template gets from transformers.
constexpr std::array<std::string_view, 9> kUnsupportedTags = {
    "block", "extends", "include", "import", "from", "call", "autoescape", "do", "raw"};

template <class Node>
StmtPtr make_stmt(size_t offset, Node node) {
  return std::make_unique<Stmt>(Stmt{offset, std::move(node)});
}

}  // namespace

StmtPtr Parser::parse_statement() {
  if (current().type != TokenType::name) fail_here("tag name expected, got ", describe(current()));
  const Token& tag = current();
  const size_t offset = tag.offset;
  const std::string name = tag.text;
  if (name == "for") return parse_for(offset);
  if (name == "if") return parse_if(offset);
  if (name == "set") return parse_set(offset);
  if (name == "macro") return parse_macro(offset);
  if (name == "with") return parse_with(offset);
  if (name == "filter") return parse_filter_block(offset);
  if (name == "print") {
    advance();
    return make_stmt(offset, stmt::Print{parse_tuple(true)});
  }
  if (name == "break" || name == "continue") {
    if (loop_depth_ == 0) fail_here("'", name, "' outside of a loop");
    advance();
    return make_stmt(offset, stmt::LoopControl{name == "break"});
  }
  if (name == "generation") {
    advance();
    return make_stmt(offset, stmt::Generation{parse_body({"endgeneration"}, true)});
  }
  if (std::find(kUnsupportedTags.begin(), kUnsupportedTags.end(), name) != kUnsupportedTags.end()) {
    fail_here("unsupported tag '", name, "'");
  }
  if (!open_tags_.empty()) {
    std::string expected;
    for (std::string_view end : open_tags_.back()) {
      expected += (expected.empty() ? "'" : " or '") + std::string(end) + "'";
    }
    fail_here("unexpected tag '", name, "', expected ", expected);
  }
  fail_here("unknown tag '", name, "'");
}

StmtPtr Parser::parse_for(size_t offset) {
  advance();
  stmt::For loop;
  loop.target = parse_target(/*allow_namespace=*/false, "in");
  expect_name("in");
  loop.iterable = parse_tuple(/*with_condexpr=*/false, "recursive");
  if (skip_name("if")) loop.condition = parse_expression();
  if (at_name("recursive")) fail_here("unsupported: recursive for loops");
  ++loop_depth_;
  loop.body = parse_body({"endfor", "else"}, false);
  --loop_depth_;
  if (advance().text == "else") loop.otherwise = parse_body({"endfor"}, true);
  return make_stmt(offset, std::move(loop));
}

StmtPtr Parser::parse_if(size_t offset) {
  advance();
  stmt::If branch;
  while (true) {
    ExprPtr condition = parse_tuple(/*with_condexpr=*/false);
    Body body = parse_body({"elif", "else", "endif"}, false);
    branch.branches.emplace_back(std::move(condition), std::move(body));
    const std::string tag = advance().text;
    if (tag == "elif") continue;
    if (tag == "else") branch.otherwise = parse_body({"endif"}, true);
    break;
  }
  return make_stmt(offset, std::move(branch));
}

StmtPtr Parser::parse_set(size_t offset) {
  advance();
  Target target = parse_target(/*allow_namespace=*/true, "");
  if (skip_op("=")) return make_stmt(offset, stmt::Set{std::move(target), parse_tuple(true)});
  stmt::SetBlock block{std::move(target), {}, {}};
  while (skip_op("|")) block.filters.push_back(parse_filter_call());
  block.body = parse_body({"endset"}, true);
  return make_stmt(offset, std::move(block));
}

StmtPtr Parser::parse_macro(size_t offset) {
  advance();
  stmt::Macro macro;
  macro.name = expect_identifier();
  expect_op("(");
  while (!at_op(")")) {
    if (!macro.parameters.empty()) expect_op(",");
    MacroParameter parameter{expect_identifier(), nullptr};
    if (skip_op("=")) {
      parameter.default_value = parse_expression();
    } else if (!macro.parameters.empty() && macro.parameters.back().default_value) {
      fail_here("non-default argument follows default argument");
    }
    macro.parameters.push_back(std::move(parameter));
  }
  expect_op(")");
  const int outer_loop_depth = loop_depth_;
  loop_depth_ = 0;  // a macro body cannot break out of the loop it is defined in
  macro.body = parse_body({"endmacro"}, true);
  loop_depth_ = outer_loop_depth;
  return make_stmt(offset, std::move(macro));
}

StmtPtr Parser::parse_with(size_t offset) {
  advance();
  stmt::With with;
  while (current().type != TokenType::block_end) {
    if (!with.assignments.empty()) expect_op(",");
    Target target = parse_target(/*allow_namespace=*/false, "");
    expect_op("=");
    with.assignments.emplace_back(std::move(target), parse_expression());
  }
  with.body = parse_body({"endwith"}, true);
  return make_stmt(offset, std::move(with));
}

StmtPtr Parser::parse_filter_block(size_t offset) {
  advance();
  stmt::FilterBlock block;
  block.filters.push_back(parse_filter_call());
  while (skip_op("|")) block.filters.push_back(parse_filter_call());
  block.body = parse_body({"endfilter"}, true);
  return make_stmt(offset, std::move(block));
}

// A name, `ns.attr` (when allowed), or names separated by commas, optionally
// in parentheses; end_name is a keyword that ends the list (`in` for loops).
Target Parser::parse_target(bool allow_namespace, std::string_view end_name) {
  Target target;
  const bool parenthesised = skip_op("(");
  while (true) {
    Target::Part part{expect_identifier(), ""};
    if (allow_namespace && skip_op(".")) part.attribute = expect_identifier();
    target.parts.push_back(std::move(part));
    if (!skip_op(",")) break;
    target.unpack = true;
    if ((parenthesised && at_op(")")) || (!end_name.empty() && at_name(end_name))) break;
  }
  if (parenthesised) expect_op(")");
  for (const auto& part : target.parts) {
    if (part.name == "true" || part.name == "false" || part.name == "none" || part.name == "True" ||
        part.name == "False" || part.name == "None") {
      fail_here("can't assign to const '", part.name, "'");
    }
  }
  return target;
}

}  // namespace hive::chat_template
