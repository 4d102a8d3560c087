#pragma once
// N ranks in one process (one thread per rank), with host memory. A
// collective is two rendezvous: every rank publishes its buffers, then each
// reads what it needs from the others' buffers into its own output, then all
// meet again, so no rank reuses a buffer (or its slot) while a peer may still
// read it. The ranks check that they agree (the same collective, the same
// sizes) before anyone reads; an abort or a disagreement is thrown after the
// second rendezvous, never between the two.
#include <cstdint>
#include <memory>
#include <vector>

#include "parallel/abortable_barrier.hpp"
#include "parallel/communicator.hpp"
#include "parallel/rank_group.hpp"

namespace hive {

class InProcessGroup final : public RankGroup {
 public:
  explicit InProcessGroup(int world_size);
  int world_size() const override { return world_size_; }
  // The communicator of one rank; its collectives must run on that rank's thread.
  std::unique_ptr<Communicator> communicator(int rank) override;
  // Makes every rank waiting in a collective, and every later collective,
  // throw hive::Error: a failed rank calls it so its peers do not hang. The
  // group cannot be used again; build a new one.
  void abort() override;
  bool aborted() const { return rendezvous_.aborted(); }

  enum class Op : uint8_t { all_reduce_sum, all_to_all, barrier };

 private:
  friend class InProcessCommunicator;
  // What one rank publishes for a collective.
  struct Slot {
    Op op = Op::barrier;
    const void* send = nullptr;
    const int64_t* send_counts = nullptr;  // rows per peer, for all_to_all
    size_t size = 0;                       // all_reduce_sum: elements; all_to_all: bytes per row
  };
  // Point to point from one rank to another.
  struct Pair {
    const void* data = nullptr;
    size_t sent_bytes = 0;
    size_t expected_bytes = 0;
    std::unique_ptr<AbortableBarrier> barrier;
  };
  int world_size_;
  AbortableBarrier rendezvous_;
  std::vector<Slot> slots_;
  std::vector<Pair> pairs_;  // [from * world + to]
};

}  // namespace hive
