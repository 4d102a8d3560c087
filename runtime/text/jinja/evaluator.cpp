#include "runtime/text/jinja/evaluator.hpp"

#include "runtime/text/jinja/filters.hpp"
#include "runtime/text/jinja/jinja_tests.hpp"
#include "runtime/text/jinja/object_access.hpp"
#include "runtime/text/jinja/value_text.hpp"

namespace hive::chat_template {

Value call_value(const Value& callee, const CallArgs& args) {
  if (callee.is_undefined()) raise_undefined(callee);
  return callee.as_callable().call(args);
}

Value Evaluator::eval(const Expr& expr, const Scope& scope) const {
  return at(expr.offset, [&] {
    return std::visit([&](const auto& node) { return visit(node, scope); }, expr.node);
  });
}

CallArgs Evaluator::eval_arguments(const Arguments& args, const Scope& scope) const {
  CallArgs call;
  for (const auto& argument : args.positional) call.positional.push_back(eval(*argument, scope));
  for (const auto& keyword : args.keywords) {
    call.keywords.emplace_back(keyword.name, eval(*keyword.value, scope));
  }
  return call;
}

Value Evaluator::apply_filter(const FilterCall& filter, const Value& input,
                              const Scope& scope) const {
  const CallArgs args = eval_arguments(filter.args, scope);
  return at(filter.offset, [&] { return find_filter(filter.name)(input, args); });
}

Value Evaluator::visit(const node::Literal& node, const Scope&) const {
  return node.value;
}

Value Evaluator::visit(const node::Name& node, const Scope& scope) const {
  if (const Value* found = scope.find(node.name)) return *found;
  return Value::undefined("'" + node.name + "' is undefined");
}

Value Evaluator::visit(const node::Sequence& node, const Scope& scope) const {
  ValueList items;
  items.reserve(node.items.size());
  for (const auto& item : node.items) items.push_back(eval(*item, scope));
  return node.tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
}

Value Evaluator::visit(const node::Mapping& node, const Scope& scope) const {
  Dict dict;
  for (const auto& [key_expr, value_expr] : node.entries) {
    Value key = eval(*key_expr, scope);
    dict.set(std::move(key), eval(*value_expr, scope));
  }
  return Value::dict(std::move(dict));
}

Value Evaluator::visit(const node::Attribute& node, const Scope& scope) const {
  return get_attribute(eval(*node.object, scope), node.name);
}

Value Evaluator::visit(const node::Item& node, const Scope& scope) const {
  const Value object = eval(*node.object, scope);
  return get_item(object, eval(*node.key, scope));
}

Value Evaluator::visit(const node::Slice& node, const Scope& scope) const {
  const Value object = eval(*node.object, scope);
  const auto bound = [&](const ExprPtr& expr) { return expr ? eval(*expr, scope) : Value::none(); };
  return get_slice(object, bound(node.start), bound(node.stop), bound(node.step));
}

Value Evaluator::visit(const node::Call& node, const Scope& scope) const {
  const Value callee = eval(*node.callee, scope);
  return call_value(callee, eval_arguments(node.args, scope));
}

Value Evaluator::visit(const node::Filter& node, const Scope& scope) const {
  return apply_filter(node.filter, eval(*node.operand, scope), scope);
}

Value Evaluator::visit(const node::Test& node, const Scope& scope) const {
  const Value operand = eval(*node.operand, scope);
  return Value::boolean(find_test(node.name)(operand, eval_arguments(node.args, scope)));
}

Value Evaluator::visit(const node::Unary& node, const Scope& scope) const {
  const Value operand = eval(*node.operand, scope);
  switch (node.op) {
    case UnaryOp::logical_not:
      return Value::boolean(!operand.truthy());
    case UnaryOp::negate:
      return negate(operand);
    case UnaryOp::plus:
      return positive(operand);
  }
  return {};
}

Value Evaluator::visit(const node::Binary& node, const Scope& scope) const {
  const Value left = eval(*node.left, scope);
  return arithmetic(node.op, left, eval(*node.right, scope));
}

// Python's `and`/`or` yield one of their operands, not a boolean.
Value Evaluator::visit(const node::Logical& node, const Scope& scope) const {
  Value left = eval(*node.left, scope);
  if (left.truthy() != node.is_and) return left;
  return eval(*node.right, scope);
}

Value Evaluator::visit(const node::Concat& node, const Scope& scope) const {
  std::string out;
  for (const auto& part : node.parts) out += to_str(eval(*part, scope));
  return Value::string(std::move(out));
}

// a < b < c is (a < b) and (b < c), evaluating b once and stopping early.
Value Evaluator::visit(const node::Compare& node, const Scope& scope) const {
  Value left = eval(*node.first, scope);
  for (const auto& [op, right_expr] : node.rest) {
    Value right = eval(*right_expr, scope);
    bool holds = false;
    switch (op) {
      case CompareOp::eq:
        holds = equals(left, right);
        break;
      case CompareOp::ne:
        holds = !equals(left, right);
        break;
      case CompareOp::lt:
        holds = compare(left, right, "<") < 0;
        break;
      case CompareOp::le:
        holds = compare(left, right, "<=") <= 0;
        break;
      case CompareOp::gt:
        holds = compare(left, right, ">") > 0;
        break;
      case CompareOp::ge:
        holds = compare(left, right, ">=") >= 0;
        break;
      case CompareOp::in:
        holds = contains(right, left);
        break;
      case CompareOp::not_in:
        holds = !contains(right, left);
        break;
    }
    if (!holds) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Value Evaluator::visit(const node::Conditional& node, const Scope& scope) const {
  if (eval(*node.condition, scope).truthy()) return eval(*node.then, scope);
  if (node.otherwise) return eval(*node.otherwise, scope);
  return Value::undefined(
      "the inline if-expression evaluated to false and no else section was defined");
}

}  // namespace hive::chat_template
