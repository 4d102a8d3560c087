#pragma once
// What the communicator tests of every transport (MPI, NCCL between
// processes) compare against: each rank's data from the run's seed, and the
// sum InProcessGroup computes for it, bit for bit.
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "parallel/in_process_communicator.hpp"
#include "tests/common/random.hpp"

namespace hive::test {

// One rank's values for one size (`salt`), the same on every transport.
inline std::vector<float> rank_data(int rank, int64_t n, uint64_t salt) {
  std::mt19937_64 rng(test_seed() * 1000003 + static_cast<uint64_t>(rank) * 7919 + salt);
  return random_floats(rng, static_cast<size_t>(n));
}

// Rows a rank sends to another: a count from (seed, from, to).
inline int64_t rows_between(int from, int to, uint64_t salt) {
  std::mt19937_64 rng(test_seed() + salt * 131 + static_cast<uint64_t>(from * 64 + to));
  return static_cast<int64_t>(rng() % 6);  // 0 included: empty exchanges happen
}

// The expected sum of every rank's data for one size, in InProcessGroup:
// world threads in this process running the same all_reduce_sum.
inline std::vector<float> in_process_sum(int world_size, int64_t n, uint64_t salt) {
  InProcessGroup group(world_size);
  std::vector<std::vector<float>> data(static_cast<size_t>(world_size));
  std::vector<std::thread> ranks;
  for (int r = 0; r < world_size; ++r) {
    data[static_cast<size_t>(r)] = rank_data(r, n, salt);
    ranks.emplace_back([&, r, comm = std::shared_ptr<Communicator>(group.communicator(r))] {
      comm->all_reduce_sum(Tensor::view(data[static_cast<size_t>(r)].data(), DType::f32, {n}));
    });
  }
  for (std::thread& t : ranks) t.join();
  return data[0];
}

// Bit for bit (memcmp is not given the null data of empty vectors).
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace hive::test
