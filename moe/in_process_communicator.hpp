#pragma once
// N ranks in one process (one thread per rank), with host memory. A
// collective is two rendezvous: every rank publishes its buffers, then each
// reads what it needs from the others' buffers into its own output, then all
// meet again, so no rank reuses a buffer (or its slot) while a peer may still
// read it.
#include <memory>
#include <vector>

#include "moe/abortable_barrier.hpp"
#include "moe/communicator.hpp"

namespace hive {

class InProcessGroup {
 public:
  explicit InProcessGroup(int world_size);
  int world_size() const { return world_size_; }
  // The communicator of one rank; its collectives must run on that rank's thread.
  std::unique_ptr<Communicator> communicator(int rank);
  // Makes every rank waiting in a collective, and every later collective,
  // throw hive::Error: a failed rank calls it so its peers do not hang. The
  // group cannot be used again; build a new one.
  void abort();
  bool aborted() const { return rendezvous_.aborted(); }

 private:
  friend class InProcessCommunicator;
  struct Slot {
    const void* send = nullptr;
    const int64_t* send_counts = nullptr;  // rows per peer, for all_to_all
    size_t row_bytes = 0;
  };
  int world_size_;
  AbortableBarrier rendezvous_;
  std::vector<Slot> slots_;
  // Point to point: mailbox[from * world + to] holds the sender's buffer.
  std::vector<const void*> mailbox_;
  std::vector<size_t> mailbox_bytes_;
  std::vector<std::unique_ptr<AbortableBarrier>> pair_barriers_;  // one per (from, to) pair
};

}  // namespace hive
