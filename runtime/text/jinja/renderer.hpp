#pragma once
// Executes statements and appends what they print. Scoping follows jinja2:
// if-blocks share their scope, while each loop iteration, macro call and
// with / set / filter block gets a child scope (see scope.hpp).
#include <string>

#include "runtime/text/jinja/ast.hpp"
#include "runtime/text/jinja/evaluator.hpp"

namespace hive::chat_template {

class Renderer {
 public:
  explicit Renderer(const Source& source) : evaluator_(source) {}

  void render(const Body& body, const ScopePtr& scope, std::string& out) const;

 private:
  enum class Flow { normal, break_loop, continue_loop };

  Flow execute(const Body& body, const ScopePtr& scope, std::string& out) const;
  Flow execute(const Stmt& stmt, const ScopePtr& scope, std::string& out) const;
  Flow run(const stmt::Text& node, const ScopePtr& scope, std::string& out) const;
  Flow run(const stmt::Print& node, const ScopePtr& scope, std::string& out) const;
  Flow run(const stmt::If& node, const ScopePtr& scope, std::string& out) const;
  Flow run(const stmt::For& node, const ScopePtr& scope, std::string& out) const;
  Flow run(const stmt::Set& node, const ScopePtr& scope, std::string& out) const;
  Flow run(const stmt::SetBlock& node, const ScopePtr& scope, std::string& out) const;
  Flow run(const stmt::Macro& node, const ScopePtr& scope, std::string& out) const;
  Flow run(const stmt::FilterBlock& node, const ScopePtr& scope, std::string& out) const;
  Flow run(const stmt::With& node, const ScopePtr& scope, std::string& out) const;
  Flow run(const stmt::LoopControl& node, const ScopePtr& scope, std::string& out) const;
  Flow run(const stmt::Generation& node, const ScopePtr& scope, std::string& out) const;

  // The body rendered in a child scope, then passed through the filters.
  std::string render_block(const Body& body, const std::vector<FilterCall>& filters,
                           const ScopePtr& scope) const;
  // The items a loop visits after its `if` condition, which sees only the target.
  ValueList loop_items(const stmt::For& node, const ScopePtr& scope) const;
  Value call_macro(const stmt::Macro& macro, const ScopePtr& defined_in,
                   const CallArgs& args) const;

  // Macros may call themselves; past this depth the render fails instead of
  // exhausting the stack (jinja2 fails at Python's recursion limit).
  static constexpr int kMaxMacroDepth = 64;

 public:
  // A render's bounds, so one request's work is bounded whatever its
  // messages hold: statements run (a loop's body counts once per
  // iteration) and bytes written. Past either, TemplateTooLarge.
  static constexpr int64_t kMaxStatements = 1'000'000;
  static constexpr size_t kMaxOutputBytes = size_t{16} << 20;

 private:
  Evaluator evaluator_;
  mutable int macro_depth_ = 0;
  mutable int64_t statements_ = 0;
};

// Binds value to a target: a name, `ns.attr`, or names to unpack into.
void assign(const Target& target, const Value& value, Scope& scope);

}  // namespace hive::chat_template
