#include "parallel/communicator.hpp"

#include "base/error.hpp"

namespace hive {

size_t row_bytes(const Tensor& t) {
  size_t bytes = dtype_size(t.dtype);
  for (int d = 1; d < t.ndim; ++d) bytes *= static_cast<size_t>(t.size(d));
  return bytes;
}

void check_all_to_all(std::string_view who, int world_size, const Tensor& send,
                      std::span<const int64_t> send_counts, const Tensor& recv,
                      std::span<const int64_t> recv_counts) {
  const auto world = static_cast<size_t>(world_size);
  check(send_counts.size() == world && recv_counts.size() == world, who, ": counts for ",
        send_counts.size(), "/", recv_counts.size(), " ranks in a group of ", world);
  check(send.ndim >= 1 && recv.ndim >= 1 && send.is_contiguous() && recv.is_contiguous() &&
            send.dtype == recv.dtype && row_bytes(send) == row_bytes(recv),
        who, ": send ", send.shape_text(), " and recv ", recv.shape_text(),
        " must be contiguous with rows of one dtype and size");
  int64_t total_send = 0, total_recv = 0;
  for (size_t r = 0; r < world; ++r) {
    check(send_counts[r] >= 0 && recv_counts[r] >= 0, who, ": negative count for rank ", r,
          " (send ", send_counts[r], ", recv ", recv_counts[r], ")");
    total_send += send_counts[r];
    total_recv += recv_counts[r];
  }
  check(total_send == send.shape[0] && total_recv == recv.shape[0], who, ": counts sum to ",
        total_send, "/", total_recv, " rows, tensors have ", send.shape[0], "/", recv.shape[0]);
}

std::vector<int64_t> Communicator::exchange_counts(std::span<const int64_t> send_counts) {
  const auto n = static_cast<int64_t>(world_size());
  check(static_cast<int64_t>(send_counts.size()) == n, "exchange_counts: ", send_counts.size(),
        " counts for ", n, " ranks");
  std::vector<int64_t> send(send_counts.begin(), send_counts.end());
  std::vector<int64_t> recv(static_cast<size_t>(n));
  const std::vector<int64_t> ones(static_cast<size_t>(n), 1);
  all_to_all(Tensor::view(send.data(), DType::i64, {n}), ones,
             Tensor::view(recv.data(), DType::i64, {n}), ones);
  return recv;
}

}  // namespace hive
