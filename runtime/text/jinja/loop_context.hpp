#pragma once
// The `loop` variable of a for loop: index, index0, revindex, revindex0,
// first, last, length, previtem, nextitem, depth, depth0, cycle(...) and
// changed(...), rebuilt for every iteration.
#include <memory>
#include <optional>

#include "runtime/text/jinja/value.hpp"

namespace hive::chat_template {

class LoopContext {
 public:
  explicit LoopContext(const ValueList& items)
      : items_(items), last_changed_(std::make_shared<std::optional<ValueList>>()) {}

  Value at(size_t index) const;

 private:
  const ValueList& items_;
  // What loop.changed() last saw; shared by every iteration's `loop`.
  std::shared_ptr<std::optional<ValueList>> last_changed_;
};

}  // namespace hive::chat_template
