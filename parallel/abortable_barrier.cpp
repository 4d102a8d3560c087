#include "parallel/abortable_barrier.hpp"

#include "base/error.hpp"

namespace hive {

void AbortableBarrier::arrive_and_wait() {
  arrive(true);
}

void AbortableBarrier::arrive_and_wait_all() {
  arrive(false);
}

void AbortableBarrier::arrive(bool abortable) {
  std::unique_lock lock(mutex_);
  check(!abortable || !aborted_, "the rank group was aborted (a peer rank failed)");
  if (++waiting_ == count_) {
    waiting_ = 0;
    ++generation_;
    changed_.notify_all();
    return;
  }
  const uint64_t generation = generation_;
  changed_.wait(lock, [&] { return (abortable && aborted_) || generation_ != generation; });
  // Released by the last arrival: this phase completed even if an abort came after.
  if (generation_ != generation) return;
  fail("the rank group was aborted (a peer rank failed)");
}

void AbortableBarrier::abort() {
  {
    const std::lock_guard lock(mutex_);
    aborted_ = true;
  }
  changed_.notify_all();
}

bool AbortableBarrier::aborted() const {
  const std::lock_guard lock(mutex_);
  return aborted_;
}

}  // namespace hive
