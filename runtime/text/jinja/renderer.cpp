#include "runtime/text/jinja/renderer.hpp"

#include "runtime/text/jinja/loop_context.hpp"
#include "runtime/text/jinja/value_text.hpp"

namespace hive::chat_template {

void assign(const Target& target, const Value& value, Scope& scope) {
  std::vector<Value> values;
  if (target.unpack) {
    values = iterate(value);
    check(values.size() == target.parts.size(),
          values.size() < target.parts.size() ? "not enough values to unpack (expected "
                                              : "too many values to unpack (expected ",
          target.parts.size(), ", got ", values.size(), ")");
  } else {
    values.push_back(value);
  }
  for (size_t i = 0; i < target.parts.size(); ++i) {
    const Target::Part& part = target.parts[i];
    if (part.attribute.empty()) {
      scope.set(part.name, values[i]);
      continue;
    }
    const Value* object = scope.find(part.name);
    check(object != nullptr && object->is_namespace(),
          "cannot assign attribute on non-namespace object '", part.name, "'");
    check(part.attribute[0] != '_',
          "Chat templates cannot store underscore-prefixed attributes on a namespace, but got '",
          part.attribute, "'. Please rename the attribute.");
    object->as_namespace().attributes.set(part.attribute, values[i]);
  }
}

void Renderer::render(const Body& body, const ScopePtr& scope, std::string& out) const {
  execute(body, scope, out);
}

Renderer::Flow Renderer::execute(const Body& body, const ScopePtr& scope, std::string& out) const {
  for (const auto& stmt : body) {
    const Flow flow = execute(*stmt, scope, out);
    if (flow != Flow::normal) return flow;
  }
  return Flow::normal;
}

Renderer::Flow Renderer::execute(const Stmt& stmt, const ScopePtr& scope, std::string& out) const {
  if (++statements_ > kMaxStatements || out.size() > kMaxOutputBytes)
    throw TemplateTooLarge(str_cat("the render ran past its bounds (", kMaxStatements,
                                   " statements, ", kMaxOutputBytes, " bytes of output)"));
  return evaluator_.at(stmt.offset, [&] {
    return std::visit([&](const auto& node) { return run(node, scope, out); }, stmt.node);
  });
}

Renderer::Flow Renderer::run(const stmt::Text& node, const ScopePtr&, std::string& out) const {
  out += node.text;
  return Flow::normal;
}

Renderer::Flow Renderer::run(const stmt::Print& node, const ScopePtr& scope,
                             std::string& out) const {
  out += to_str(evaluator_.eval(*node.value, *scope));
  return Flow::normal;
}

Renderer::Flow Renderer::run(const stmt::If& node, const ScopePtr& scope, std::string& out) const {
  for (const auto& [condition, body] : node.branches) {
    if (evaluator_.eval(*condition, *scope).truthy()) return execute(body, scope, out);
  }
  return execute(node.otherwise, scope, out);
}

ValueList Renderer::loop_items(const stmt::For& node, const ScopePtr& scope) const {
  ValueList items = iterate(evaluator_.eval(*node.iterable, *scope));
  if (!node.condition) return items;
  ValueList kept;
  for (Value& item : items) {
    auto probe = std::make_shared<Scope>(scope);
    assign(node.target, item, *probe);
    if (evaluator_.eval(*node.condition, *probe).truthy()) kept.push_back(std::move(item));
  }
  return kept;
}

Renderer::Flow Renderer::run(const stmt::For& node, const ScopePtr& scope, std::string& out) const {
  const ValueList items = loop_items(node, scope);
  // The else block, like the body, cannot leak assignments out of the loop.
  if (items.empty()) return execute(node.otherwise, std::make_shared<Scope>(scope), out);
  LoopContext loop(items);
  for (size_t i = 0; i < items.size(); ++i) {
    auto iteration = std::make_shared<Scope>(scope);
    assign(node.target, items[i], *iteration);
    iteration->set("loop", loop.at(i));
    if (execute(node.body, iteration, out) == Flow::break_loop) break;
  }
  return Flow::normal;
}

Renderer::Flow Renderer::run(const stmt::Set& node, const ScopePtr& scope, std::string&) const {
  assign(node.target, evaluator_.eval(*node.value, *scope), *scope);
  return Flow::normal;
}

Renderer::Flow Renderer::run(const stmt::SetBlock& node, const ScopePtr& scope,
                             std::string&) const {
  assign(node.target, Value::string(render_block(node.body, node.filters, scope)), *scope);
  return Flow::normal;
}

Renderer::Flow Renderer::run(const stmt::FilterBlock& node, const ScopePtr& scope,
                             std::string& out) const {
  out += render_block(node.body, node.filters, scope);
  return Flow::normal;
}

std::string Renderer::render_block(const Body& body, const std::vector<FilterCall>& filters,
                                   const ScopePtr& scope) const {
  std::string text;
  execute(body, std::make_shared<Scope>(scope), text);
  Value value = Value::string(std::move(text));
  for (const FilterCall& filter : filters) value = evaluator_.apply_filter(filter, value, *scope);
  return to_str(value);
}

Renderer::Flow Renderer::run(const stmt::With& node, const ScopePtr& scope,
                             std::string& out) const {
  auto inner = std::make_shared<Scope>(scope);
  for (const auto& [target, value] : node.assignments) {
    assign(target, evaluator_.eval(*value, *scope), *inner);
  }
  return execute(node.body, inner, out);
}

Renderer::Flow Renderer::run(const stmt::LoopControl& node, const ScopePtr&, std::string&) const {
  return node.is_break ? Flow::break_loop : Flow::continue_loop;
}

Renderer::Flow Renderer::run(const stmt::Generation& node, const ScopePtr& scope,
                             std::string& out) const {
  return execute(node.body, scope, out);
}

// The macro keeps a weak reference to the scope it was defined in: the scope
// also holds the macro, and a strong one would make a cycle that never frees.
Renderer::Flow Renderer::run(const stmt::Macro& node, const ScopePtr& scope, std::string&) const {
  std::weak_ptr<Scope> defined_in = scope;
  scope->set(node.name, Value::callable(node.name, [this, &node, defined_in](const CallArgs& args) {
               const ScopePtr parent = defined_in.lock();
               check(parent != nullptr, "macro '", node.name, "' called after its scope ended");
               return call_macro(node, parent, args);
             }));
  return Flow::normal;
}

// Missing arguments without a default are undefined, as in jinja2.
Value Renderer::call_macro(const stmt::Macro& macro, const ScopePtr& defined_in,
                           const CallArgs& args) const {
  check(macro_depth_ < kMaxMacroDepth, "macro '", macro.name, "': calls nested deeper than ",
        kMaxMacroDepth, " levels");
  ++macro_depth_;
  struct Leave {
    int& depth;
    ~Leave() { --depth; }
  } leave{macro_depth_};
  const auto& parameters = macro.parameters;
  check(args.positional.size() <= parameters.size(), "macro '", macro.name,
        "' takes not more than ", parameters.size(), " argument(s)");
  auto frame = std::make_shared<Scope>(defined_in);
  std::vector<bool> bound(parameters.size(), false);
  for (size_t i = 0; i < args.positional.size(); ++i) {
    frame->set(parameters[i].name, args.positional[i]);
    bound[i] = true;
  }
  for (const auto& [name, value] : args.keywords) {
    size_t i = 0;
    while (i < parameters.size() && parameters[i].name != name) ++i;
    check(i < parameters.size(), "macro '", macro.name, "' takes no keyword argument '", name, "'");
    check(!bound[i], "macro '", macro.name, "' got multiple values for argument '", name, "'");
    frame->set(name, value);
    bound[i] = true;
  }
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (bound[i]) continue;
    const auto& parameter = parameters[i];
    frame->set(parameter.name, parameter.default_value
                                   ? evaluator_.eval(*parameter.default_value, *frame)
                                   : Value::undefined("'" + parameter.name + "' is undefined"));
  }
  std::string out;
  execute(macro.body, frame, out);
  return Value::string(std::move(out));
}

}  // namespace hive::chat_template
