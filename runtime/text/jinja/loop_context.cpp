#include "runtime/text/jinja/loop_context.hpp"

#include "base/error.hpp"
#include "runtime/text/jinja/value_ops.hpp"

namespace hive::chat_template {

Value LoopContext::at(size_t index) const {
  const auto size = static_cast<int64_t>(items_.size());
  const auto i = static_cast<int64_t>(index);
  Dict loop;
  loop.set("index", Value::integer(i + 1));
  loop.set("index0", Value::integer(i));
  loop.set("revindex", Value::integer(size - i));
  loop.set("revindex0", Value::integer(size - i - 1));
  loop.set("first", Value::boolean(i == 0));
  loop.set("last", Value::boolean(i == size - 1));
  loop.set("length", Value::integer(size));
  loop.set("depth", Value::integer(1));
  loop.set("depth0", Value::integer(0));
  loop.set("previtem", i > 0 ? items_[index - 1] : Value::undefined("there is no previous item"));
  loop.set("nextitem",
           i + 1 < size ? items_[index + 1] : Value::undefined("there is no next item"));
  loop.set("cycle", Value::callable("cycle", [i](const CallArgs& args) {
             check(!args.positional.empty(), "no items for cycling given");
             return args.positional[static_cast<size_t>(i) % args.positional.size()];
           }));
  loop.set("changed", Value::callable("changed", [state = last_changed_](const CallArgs& args) {
             const Value now = Value::tuple(args.positional);
             if (*state && equals(Value::tuple(**state), now)) return Value::boolean(false);
             *state = args.positional;
             return Value::boolean(true);
           }));
  return Value::dict(std::move(loop));
}

}  // namespace hive::chat_template
