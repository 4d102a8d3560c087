#include "parallel/in_process_communicator.hpp"

#include <cstring>
#include <exception>
#include <string>

#include "base/error.hpp"

namespace hive {

namespace {

int checked_world_size(int world_size) {
  check(world_size >= 1, "a group needs at least one rank (got ", world_size, ")");
  return world_size;
}

const char* op_name(InProcessGroup::Op op) {
  switch (op) {
    case InProcessGroup::Op::all_reduce_sum:
      return "all_reduce_sum";
    case InProcessGroup::Op::all_to_all:
      return "all_to_all";
    case InProcessGroup::Op::barrier:
      return "barrier";
  }
  return "?";
}

}  // namespace

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(InProcessGroup& group, int rank) : group_(group), rank_(rank) {}

  int rank() const override { return rank_; }
  int world_size() const override { return group_.world_size_; }

  void all_reduce_sum(const Tensor& data) override {
    check(data.dtype == DType::f32 && data.is_contiguous() && data.device == Device::cpu,
          "all_reduce_sum: needs a contiguous f32 host tensor (got ", data.shape_text(), ")");
    const int64_t n = data.numel();
    std::vector<float> sum(static_cast<size_t>(n), 0.0f);
    InProcessGroup::Slot slot;
    slot.op = InProcessGroup::Op::all_reduce_sum;
    slot.send = data.data;
    slot.size = static_cast<size_t>(n);
    collective(slot, [&] {
      for (const auto& peer : group_.slots_) {
        const float* values = static_cast<const float*>(peer.send);
        for (int64_t i = 0; i < n; ++i) sum[static_cast<size_t>(i)] += values[i];
      }
    });
    if (n > 0) std::memcpy(data.data, sum.data(), sum.size() * sizeof(float));  // may be null at 0
  }

  void all_to_all(const Tensor& send, std::span<const int64_t> send_counts, const Tensor& recv,
                  std::span<const int64_t> recv_counts) override {
    check_all_to_all("all_to_all", world_size(), send, send_counts, recv, recv_counts);
    check(send.device == Device::cpu && recv.device == Device::cpu,
          "all_to_all: needs host tensors");
    InProcessGroup::Slot slot;
    slot.op = InProcessGroup::Op::all_to_all;
    slot.send = send.data;
    slot.send_counts = send_counts.data();
    slot.size = row_bytes(send);
    collective(slot, [&] {
      // Check every peer before copying, so a mismatch writes nothing.
      for (int peer = 0; peer < world_size(); ++peer) {
        const int64_t rows = group_.slots_[static_cast<size_t>(peer)].send_counts[rank_];
        check(rows == recv_counts[static_cast<size_t>(peer)], "all_to_all: rank ", peer, " sends ",
              rows, " rows to rank ", rank_, ", which expects ",
              recv_counts[static_cast<size_t>(peer)]);
      }
      char* out = static_cast<char*>(recv.data);
      for (const auto& peer : group_.slots_) {
        // The peer's rows for this rank start after its rows for lower ranks.
        int64_t offset = 0;
        for (int r = 0; r < rank_; ++r) offset += peer.send_counts[r];
        const size_t bytes = static_cast<size_t>(peer.send_counts[rank_]) * peer.size;
        if (bytes)
          std::memcpy(out,
                      static_cast<const char*>(peer.send) + static_cast<size_t>(offset) * peer.size,
                      bytes);
        out += bytes;
      }
    });
  }

  void send(const Tensor& data, int peer) override {
    auto& pair = group_.pairs_[pair_index(rank_, peer)];
    pair.data = data.data;
    pair.sent_bytes = data.nbytes();
    pair.barrier->arrive_and_wait();  // the receiver may read
    const size_t expected = pair.expected_bytes;
    pair.barrier->arrive_and_wait_all();  // the receiver has read (or refused)
    check(data.nbytes() == expected, "send: rank ", rank_, " sent ", data.nbytes(), " bytes, rank ",
          peer, " expects ", expected);
  }

  void recv(const Tensor& data, int peer) override {
    auto& pair = group_.pairs_[pair_index(peer, rank_)];
    pair.expected_bytes = data.nbytes();
    pair.barrier->arrive_and_wait();
    const bool match = pair.sent_bytes == pair.expected_bytes;
    if (match) std::memcpy(data.data, pair.data, data.nbytes());
    const size_t sent = pair.sent_bytes;
    pair.barrier->arrive_and_wait_all();
    check(match, "recv: rank ", peer, " sent ", sent, " bytes, rank ", rank_, " expects ",
          data.nbytes());
  }

  void barrier() override {
    InProcessGroup::Slot slot;
    slot.op = InProcessGroup::Op::barrier;
    collective(slot, [] {});
  }

 private:
  size_t pair_index(int from, int to) const {
    check(from >= 0 && from < world_size() && to >= 0 && to < world_size() && from != to,
          "point-to-point between ranks ", from, " and ", to, " in a group of ", world_size());
    return static_cast<size_t>(from * world_size() + to);
  }

  // One collective: every rank publishes its slot and waits for the others,
  // then reads from its peers' buffers, then waits until all have read. Once
  // all have published, each rank reads and arrives again even if the group
  // is aborted meanwhile or the ranks disagree (a different collective, other
  // sizes): leaving early would free a buffer a peer is still reading. What
  // went wrong is thrown after the second rendezvous.
  template <class Read>
  void collective(const InProcessGroup::Slot& mine, Read read) {
    group_.slots_[static_cast<size_t>(rank_)] = mine;
    group_.rendezvous_.arrive_and_wait();
    std::exception_ptr error;
    try {
      check_agreement();
      read();
    } catch (...) {
      error = std::current_exception();
    }
    group_.rendezvous_.arrive_and_wait_all();
    if (error) std::rethrow_exception(error);
  }

  // Every rank sees the same slots, so all of them throw here or none does.
  void check_agreement() const {
    const auto& first = group_.slots_[0];
    for (size_t r = 1; r < group_.slots_.size(); ++r) {
      const auto& slot = group_.slots_[r];
      check(slot.op == first.op, "collective mismatch: rank 0 called ", op_name(first.op),
            ", rank ", r, " called ", op_name(slot.op));
      check(slot.size == first.size, op_name(first.op), ": rank 0 passed ", first.size,
            first.op == InProcessGroup::Op::all_to_all ? " bytes per row" : " elements", ", rank ",
            r, " passed ", slot.size);
    }
  }

  InProcessGroup& group_;
  int rank_;
};

InProcessGroup::InProcessGroup(int world_size)
    : world_size_(checked_world_size(world_size)),
      rendezvous_(world_size),
      slots_(static_cast<size_t>(world_size)),
      pairs_(static_cast<size_t>(world_size) * static_cast<size_t>(world_size)) {
  for (Pair& pair : pairs_) pair.barrier = std::make_unique<AbortableBarrier>(2);
}

std::unique_ptr<Communicator> InProcessGroup::communicator(int rank) {
  check(rank >= 0 && rank < world_size_, "rank ", rank, " outside a group of ", world_size_);
  return std::make_unique<InProcessCommunicator>(*this, rank);
}

void InProcessGroup::abort() {
  rendezvous_.abort();
  for (Pair& pair : pairs_) pair.barrier->abort();
}

}  // namespace hive
