#pragma once
// Evaluates expressions against a scope with jinja2's semantics: names that
// are not bound are undefined (printing as "", failing when used), `and` /
// `or` return an operand as Python does, comparisons chain, and errors from
// values are re-thrown naming the line and column of the expression.
#include <exception>
#include <string>
#include <vector>

#include "runtime/text/jinja/ast.hpp"
#include "runtime/text/jinja/errors.hpp"
#include "runtime/text/jinja/scope.hpp"
#include "runtime/text/jinja/source.hpp"

namespace hive::chat_template {

class Evaluator {
 public:
  explicit Evaluator(const Source& source) : source_(source) {}

  Value eval(const Expr& expr, const Scope& scope) const;
  CallArgs eval_arguments(const Arguments& args, const Scope& scope) const;
  Value apply_filter(const FilterCall& filter, const Value& input, const Scope& scope) const;

  // Runs body; an error from it that does not yet say where it happened is
  // re-thrown as a TemplateError naming the template position at offset.
  template <class Body>
  auto at(size_t offset, Body&& body) const -> decltype(body()) {
    try {
      return body();
    } catch (const TemplateRaised& raised) {
      if (!raised.location().empty()) throw;
      throw TemplateRaised(source_.location(offset), raised.message());
    } catch (const TemplateError&) {
      throw;
    } catch (const Error& error) {
      throw TemplateError(source_.location(offset) + ": " + error.what());
    }
  }

 private:
  Value visit(const node::Literal& node, const Scope& scope) const;
  Value visit(const node::Name& node, const Scope& scope) const;
  Value visit(const node::Sequence& node, const Scope& scope) const;
  Value visit(const node::Mapping& node, const Scope& scope) const;
  Value visit(const node::Attribute& node, const Scope& scope) const;
  Value visit(const node::Item& node, const Scope& scope) const;
  Value visit(const node::Slice& node, const Scope& scope) const;
  Value visit(const node::Call& node, const Scope& scope) const;
  Value visit(const node::Filter& node, const Scope& scope) const;
  Value visit(const node::Test& node, const Scope& scope) const;
  Value visit(const node::Unary& node, const Scope& scope) const;
  Value visit(const node::Binary& node, const Scope& scope) const;
  Value visit(const node::Logical& node, const Scope& scope) const;
  Value visit(const node::Concat& node, const Scope& scope) const;
  Value visit(const node::Compare& node, const Scope& scope) const;
  Value visit(const node::Conditional& node, const Scope& scope) const;

  const Source& source_;
};

// Calls a callable value; calling an undefined one raises its message.
Value call_value(const Value& callee, const CallArgs& args);

}  // namespace hive::chat_template
