#include "moe/in_process_communicator.hpp"

#include <cstring>

#include "kernels/error.hpp"

namespace hive {

namespace {

size_t row_bytes(const Tensor& t) {
  return t.shape[0] == 0 ? 0 : t.nbytes() / static_cast<size_t>(t.shape[0]);
}

}  // namespace

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(InProcessGroup& group, int rank) : group_(group), rank_(rank) {}

  int rank() const override { return rank_; }
  int world_size() const override { return group_.world_size_; }

  void all_reduce_sum(const Tensor& data) override {
    check(data.dtype == DType::f32 && data.is_contiguous() && data.device == Device::cpu,
          "all_reduce_sum: needs a contiguous f32 host tensor (got ", data.shape_string(), ")");
    publish({data.data, nullptr, 0});
    const int64_t n = data.numel();
    std::vector<float> sum(static_cast<size_t>(n), 0.0f);
    for (const auto& slot : group_.slots_) {
      const float* peer = static_cast<const float*>(slot.send);
      for (int64_t i = 0; i < n; ++i) sum[static_cast<size_t>(i)] += peer[i];
    }
    group_.rendezvous_.arrive_and_wait();  // every rank has read every input
    std::memcpy(data.data, sum.data(), sum.size() * sizeof(float));
  }

  void all_to_all(const Tensor& send, std::span<const int64_t> send_counts, const Tensor& recv,
                  std::span<const int64_t> recv_counts) override {
    const auto world = static_cast<size_t>(world_size());
    check(send_counts.size() == world && recv_counts.size() == world, "all_to_all: counts for ",
          send_counts.size(), "/", recv_counts.size(), " ranks in a group of ", world);
    check(send.is_contiguous() && recv.is_contiguous() && send.dtype == recv.dtype &&
              (send.shape[0] == 0 || recv.shape[0] == 0 || row_bytes(send) == row_bytes(recv)),
          "all_to_all: send ", send.shape_string(), " and recv ", recv.shape_string(),
          " must be contiguous with equal rows");
    int64_t total_send = 0, total_recv = 0;
    for (size_t r = 0; r < world; ++r) total_send += send_counts[r], total_recv += recv_counts[r];
    check(total_send == send.shape[0] && total_recv == recv.shape[0], "all_to_all: counts sum to ",
          total_send, "/", total_recv, " rows, tensors have ", send.shape[0], "/", recv.shape[0]);
    publish({send.data, send_counts.data(), row_bytes(send)});
    char* out = static_cast<char*>(recv.data);
    for (size_t peer = 0; peer < world; ++peer) {
      const auto& slot = group_.slots_[peer];
      // The peer's rows for this rank start after its rows for lower ranks.
      int64_t offset = 0;
      for (int r = 0; r < rank_; ++r) offset += slot.send_counts[r];
      const int64_t rows = slot.send_counts[rank_];
      check(rows == recv_counts[peer], "all_to_all: rank ", peer, " sends ", rows, " rows to rank ",
            rank_, ", which expects ", recv_counts[peer]);
      const size_t bytes = static_cast<size_t>(rows) * slot.row_bytes;
      if (bytes)
        std::memcpy(
            out, static_cast<const char*>(slot.send) + static_cast<size_t>(offset) * slot.row_bytes,
            bytes);
      out += bytes;
    }
    group_.rendezvous_.arrive_and_wait();
  }

  void send(const Tensor& data, int peer) override {
    const size_t pair = pair_index(rank_, peer);
    group_.mailbox_[pair] = data.data;
    group_.mailbox_bytes_[pair] = data.nbytes();
    group_.pair_barriers_[pair]->arrive_and_wait();  // the receiver may read
    group_.pair_barriers_[pair]->arrive_and_wait();  // the receiver has read
  }

  void recv(const Tensor& data, int peer) override {
    const size_t pair = pair_index(peer, rank_);
    group_.pair_barriers_[pair]->arrive_and_wait();
    check(group_.mailbox_bytes_[pair] == data.nbytes(), "recv: rank ", peer, " sent ",
          group_.mailbox_bytes_[pair], " bytes, rank ", rank_, " expects ", data.nbytes());
    std::memcpy(data.data, group_.mailbox_[pair], data.nbytes());
    group_.pair_barriers_[pair]->arrive_and_wait();
  }

  void barrier() override { group_.rendezvous_.arrive_and_wait(); }

 private:
  size_t pair_index(int from, int to) const {
    check(from >= 0 && from < world_size() && to >= 0 && to < world_size() && from != to,
          "point-to-point between ranks ", from, " and ", to, " in a group of ", world_size());
    return static_cast<size_t>(from * world_size() + to);
  }

  // Publishes this rank's buffers and waits until every rank has.
  void publish(const InProcessGroup::Slot& slot) {
    group_.slots_[static_cast<size_t>(rank_)] = slot;
    group_.rendezvous_.arrive_and_wait();
  }

  InProcessGroup& group_;
  int rank_;
};

InProcessGroup::InProcessGroup(int world_size)
    : world_size_(world_size),
      rendezvous_(world_size),
      slots_(static_cast<size_t>(world_size)),
      mailbox_(static_cast<size_t>(world_size * world_size)),
      mailbox_bytes_(static_cast<size_t>(world_size * world_size)) {
  check(world_size >= 1, "a group needs at least one rank (got ", world_size, ")");
  for (int i = 0; i < world_size * world_size; ++i)
    pair_barriers_.push_back(std::make_unique<AbortableBarrier>(2));
}

std::unique_ptr<Communicator> InProcessGroup::communicator(int rank) {
  check(rank >= 0 && rank < world_size_, "rank ", rank, " outside a group of ", world_size_);
  return std::make_unique<InProcessCommunicator>(*this, rank);
}

}  // namespace hive

namespace hive {

void InProcessGroup::abort() {
  rendezvous_.abort();
  for (auto& pair : pair_barriers_) pair->abort();
}

}  // namespace hive
