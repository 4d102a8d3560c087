#pragma once
// The parsed template: statements holding expressions, mirroring jinja2's
// node types for the subset chat templates use. Every node keeps the offset
// of its first token so that run-time errors can name line and column.
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "runtime/text/jinja/value.hpp"
#include "runtime/text/jinja/value_ops.hpp"

namespace hive::chat_template {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Keyword {
  std::string name;
  ExprPtr value;
};

struct Arguments {
  std::vector<ExprPtr> positional;
  std::vector<Keyword> keywords;
};

// `| name(args)` in an expression or a filter chain of `{% filter %}`/`{% set %}`.
struct FilterCall {
  size_t offset = 0;
  std::string name;
  Arguments args;
};

enum class CompareOp { eq, ne, lt, le, gt, ge, in, not_in };
enum class UnaryOp { logical_not, negate, plus };

namespace node {
struct Literal {
  Value value;
};
struct Name {
  std::string name;
};
struct Sequence {
  std::vector<ExprPtr> items;
  bool tuple = false;
};
struct Mapping {
  std::vector<std::pair<ExprPtr, ExprPtr>> entries;
};
struct Attribute {
  ExprPtr object;
  std::string name;
};
struct Item {
  ExprPtr object;
  ExprPtr key;
};
struct Slice {
  ExprPtr object, start, stop, step;
};  // null bounds were omitted
struct Call {
  ExprPtr callee;
  Arguments args;
};
struct Filter {
  ExprPtr operand;
  FilterCall filter;
};
struct Test {
  ExprPtr operand;
  std::string name;
  Arguments args;
};
struct Unary {
  UnaryOp op;
  ExprPtr operand;
};
struct Binary {
  BinaryOp op;
  ExprPtr left, right;
};
struct Logical {
  bool is_and;
  ExprPtr left, right;
};
struct Concat {
  std::vector<ExprPtr> parts;
};
struct Compare {
  ExprPtr first;
  std::vector<std::pair<CompareOp, ExprPtr>> rest;
};
struct Conditional {
  ExprPtr condition, then, otherwise;
};  // otherwise may be null
}  // namespace node

struct Expr {
  size_t offset = 0;
  std::variant<node::Literal, node::Name, node::Sequence, node::Mapping, node::Attribute,
               node::Item, node::Slice, node::Call, node::Filter, node::Test, node::Unary,
               node::Binary, node::Logical, node::Concat, node::Compare, node::Conditional>
      node;
};

// What `set`, `for` and `with` assign to: a name, `ns.attribute`, or a
// tuple of names to unpack into.
struct Target {
  struct Part {
    std::string name;
    std::string attribute;  // non-empty for a namespace attribute `name.attribute`
  };
  std::vector<Part> parts;
  bool unpack = false;
};

struct MacroParameter {
  std::string name;
  ExprPtr default_value;  // may be null
};

namespace stmt {
struct Text {
  std::string text;
};
struct Print {
  ExprPtr value;
};
struct If {
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body otherwise;
};
struct For {
  Target target;
  ExprPtr iterable;
  ExprPtr condition;
  Body body;
  Body otherwise;
};
struct Set {
  Target target;
  ExprPtr value;
};
struct SetBlock {
  Target target;
  std::vector<FilterCall> filters;
  Body body;
};
struct Macro {
  std::string name;
  std::vector<MacroParameter> parameters;
  Body body;
};
struct FilterBlock {
  std::vector<FilterCall> filters;
  Body body;
};
struct With {
  std::vector<std::pair<Target, ExprPtr>> assignments;
  Body body;
};
struct LoopControl {
  bool is_break;
};
// transformers' {% generation %} marks assistant text for masks; it renders
// as its body.
struct Generation {
  Body body;
};
}  // namespace stmt

struct Stmt {
  size_t offset = 0;
  std::variant<stmt::Text, stmt::Print, stmt::If, stmt::For, stmt::Set, stmt::SetBlock, stmt::Macro,
               stmt::FilterBlock, stmt::With, stmt::LoopControl, stmt::Generation>
      node;
};

}  // namespace hive::chat_template
