#include "moe/communicator.hpp"

#include "kernels/error.hpp"

namespace hive {

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
