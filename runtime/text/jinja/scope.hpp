#pragma once
// Variable scopes, chained to their parents like jinja2's frames:
//
//   globals (range, namespace, raise_exception, ...)
//     └─ context (messages, tools, bos_token, kwargs)   <- top-level {% set %}
//          └─ one scope per loop iteration, macro call, with/set/filter block
//
// A lookup walks outwards; an assignment always lands in the innermost scope,
// which is why `{% set %}` inside a loop does not leak out of it (templates
// use a namespace for that). Scopes are shared because a macro keeps the
// scope it was defined in.
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/text/jinja/value.hpp"

namespace hive::chat_template {

class Scope {
 public:
  explicit Scope(std::shared_ptr<const Scope> parent = nullptr) : parent_(std::move(parent)) {}

  const Value* find(std::string_view name) const {
    for (const Scope* scope = this; scope != nullptr; scope = scope->parent_.get()) {
      if (const Value* found = scope->variables_.find(name)) return found;
    }
    return nullptr;
  }

  void set(std::string name, Value value) { variables_.set(std::move(name), std::move(value)); }

 private:
  std::shared_ptr<const Scope> parent_;
  Dict variables_;
};

using ScopePtr = std::shared_ptr<Scope>;

}  // namespace hive::chat_template
