#pragma once
// A reusable barrier for a fixed number of threads that can be aborted: once
// abort() is called, every thread waiting in it, and every later arrival,
// throws hive::Error. In-process ranks meet in such barriers inside every
// collective; when one rank fails, aborting the group releases its peers
// instead of leaving them waiting for ever (std::barrier cannot be woken).
//
// arrive_and_wait_all() ignores an abort: it returns when all threads have
// arrived. A collective's second rendezvous uses it, where every rank is
// known to be on its way and none may leave while a peer still reads its
// buffers.
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace hive {

class AbortableBarrier {
 public:
  explicit AbortableBarrier(int count) : count_(count), waiting_(0) {}

  void arrive_and_wait();
  void arrive_and_wait_all();
  void abort();
  bool aborted() const;

 private:
  void arrive(bool abortable);

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  const int count_;
  int waiting_;
  uint64_t generation_ = 0;
  bool aborted_ = false;
};

}  // namespace hive
