#pragma once
// Collectives between the ranks of a parallel group: the data plane of
// expert and tensor parallelism. Two implementations with the same
// semantics: in-process CPU ranks (in_process_communicator.hpp) and NCCL
// (nccl_communicator.hpp, built with CUDA). Every rank calls every
// collective in the same order; tensors are contiguous views on the
// communicator's device.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "kernels/tensor.hpp"

namespace hive {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // data (f32) = the sum of every rank's data, added in rank order, so all
  // ranks hold bit-identical results.
  virtual void all_reduce_sum(const Tensor& data) = 0;

  // Variable-count all-to-all over rows. send holds the rows for rank 0, then
  // rank 1, ... (send_counts[r] rows each); recv receives the rows from rank
  // 0, then rank 1, ... (recv_counts[r] rows each). Rows are dim 0 of send
  // and recv, which share dtype and row size.
  //
  //   rank 0 send: [a0 a0 | a1]      rank 1 send: [b0 | b1 b1 b1]
  //   rank 0 recv: [a0 a0 | b0]      rank 1 recv: [a1 | b1 b1 b1]
  virtual void all_to_all(const Tensor& send, std::span<const int64_t> send_counts,
                          const Tensor& recv, std::span<const int64_t> recv_counts) = 0;

  // Point to point; the peer calls the matching recv / send.
  virtual void send(const Tensor& data, int peer) = 0;
  virtual void recv(const Tensor& data, int peer) = 0;

  virtual void barrier() = 0;

  // How many rows each rank will send to this one, given what this one
  // sends to each: an all-to-all of one count per peer. Host vectors in and
  // out; a device communicator stages them through its device.
  virtual std::vector<int64_t> exchange_counts(std::span<const int64_t> send_counts);
};

// Bytes of one row (dim 0) of t: the product of the other dims, so that a
// tensor of zero rows still has its row size.
size_t row_bytes(const Tensor& t);

// What one rank can check of an all_to_all on its own: a count per rank, none
// negative, summing to the rows of send and recv, which are contiguous and
// share dtype and row size. Throws hive::Error naming `who`.
void check_all_to_all(std::string_view who, int world_size, const Tensor& send,
                      std::span<const int64_t> send_counts, const Tensor& recv,
                      std::span<const int64_t> recv_counts);

}  // namespace hive
