// The NCCL rank group between processes (parallel.transport: nccl), run by
// ctest under mpirun with 1, 2 and 4 ranks, one GPU each. Where every rank
// has its GPU: all_to_all delivers exactly the bytes each peer computed,
// all_reduce_sum equals InProcessGroup's rank-order sum bit for bit, from
// host tensors (staged through the device) and device tensors alike, and a
// collective that a peer never joins is an error naming the rank, not a
// hang. Where a rank has no GPU (the CPU machines), making the group is the
// clear start error, and the rest is skipped with the reason.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "parallel/in_process_communicator.hpp"
#include "parallel/nccl_rank_group.hpp"
#include "tests/common/random.hpp"
#include "tests/parallel/collective_reference.hpp"

namespace hive {
namespace {

using test::in_process_sum;
using test::rank_data;
using test::rows_between;
using test::same_bits;

using test::test_seed;

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// Why the job cannot run the group ("" when it can), agreed by every rank
// (a collective, the first time): all ranks skip together, or none does.
const std::string& shortfall() {
  static const std::string why = [] {
    std::string mine;
    try {
      nccl_rank_device(world_rank());
    } catch (const Error& e) {
      mine = e.what();
    }
    int ready = mine.empty() ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &ready, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (ready == 1) return std::string();
    const std::string reason = mine.empty() ? "another rank of the job has no CUDA device" : mine;
    if (world_rank() == 0) std::printf("NCCL rank group tests skipped: %s\n", reason.c_str());
    return reason;
  }();
  return why;
}

Communicator& world() {
  static const std::shared_ptr<RankGroup> group = make_nccl_rank_group(std::chrono::seconds(60));
  static const std::unique_ptr<Communicator> comm = group->communicator(world_rank());
  return *comm;
}

// Device memory holding a copy of host bytes, freed with the object.
class DeviceCopy {
 public:
  explicit DeviceCopy(const void* host, size_t bytes) : bytes_(bytes) {
    EXPECT_EQ(cudaMalloc(&data_, bytes + 1), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceCopy() { cudaFree(data_); }
  DeviceCopy(const DeviceCopy&) = delete;
  DeviceCopy& operator=(const DeviceCopy&) = delete;

  Tensor tensor(DType dtype, const std::vector<int64_t>& shape) const {
    return Tensor::view(data_, dtype, shape.data(), static_cast<int>(shape.size()), Device::cuda);
  }
  void copy_to(void* host) const {
    EXPECT_EQ(cudaMemcpy(host, data_, bytes_, cudaMemcpyDeviceToHost), cudaSuccess);
  }

 private:
  void* data_ = nullptr;
  size_t bytes_;
};

std::vector<uint8_t> bytes_between(int from, int to, size_t bytes, uint64_t salt) {
  std::mt19937_64 rng(test_seed() ^ (salt * 977 + static_cast<uint64_t>(from * 64 + to) * 31));
  std::vector<uint8_t> out(bytes);
  for (uint8_t& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

TEST(NcclRankGroup, WithoutADeviceTheGroupIsAClearError) {
  const CudaDevices devices = query_cuda_devices();
  if (devices.count > 0 || !devices.error.empty())
    GTEST_SKIP() << "this rank sees a CUDA device (or a broken one): the error is for none";
  try {
    make_nccl_rank_group(std::chrono::seconds(60));
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              str_cat("parallel.transport nccl needs a CUDA device per process; rank ",
                      world_rank(), " sees none"));
  }
}

TEST(NcclRankGroup, AllToAllDeliversEveryPeersRows) {
  if (!shortfall().empty()) GTEST_SKIP() << shortfall();
  SCOPED_TRACE(testing::Message() << "seed " << test_seed());
  Communicator& comm = world();
  const int me = comm.rank(), n = comm.world_size();
  for (const bool on_device : {false, true})
    for (const auto& [dtype, width] : {std::pair{DType::f32, 3}, {DType::bf16, 5}}) {
      const uint64_t salt = static_cast<uint64_t>(width) + (on_device ? 100 : 0);
      const size_t row = dtype_size(dtype) * static_cast<size_t>(width);
      std::vector<int64_t> send_counts, recv_counts;
      std::vector<uint8_t> send, expected;
      for (int peer = 0; peer < n; ++peer) {
        send_counts.push_back(rows_between(me, peer, salt));
        const auto out =
            bytes_between(me, peer, static_cast<size_t>(send_counts.back()) * row, salt);
        send.insert(send.end(), out.begin(), out.end());
        recv_counts.push_back(rows_between(peer, me, salt));
        const auto in =
            bytes_between(peer, me, static_cast<size_t>(recv_counts.back()) * row, salt);
        expected.insert(expected.end(), in.begin(), in.end());
      }
      EXPECT_EQ(comm.exchange_counts(send_counts), recv_counts);
      const int64_t send_rows = static_cast<int64_t>(send.size() / row);
      const int64_t recv_rows = static_cast<int64_t>(expected.size() / row);
      std::vector<uint8_t> received(expected.size(), 0xA5);
      if (on_device) {
        const DeviceCopy s(send.data(), send.size()), r(received.data(), received.size());
        comm.all_to_all(s.tensor(dtype, {send_rows, width}), send_counts,
                        r.tensor(dtype, {recv_rows, width}), recv_counts);
        r.copy_to(received.data());
      } else {
        comm.all_to_all(Tensor::view(send.data(), dtype, {send_rows, width}), send_counts,
                        Tensor::view(received.data(), dtype, {recv_rows, width}), recv_counts);
      }
      EXPECT_EQ(received, expected) << (on_device ? "device" : "host") << " rows of " << width;
    }
}

TEST(NcclRankGroup, AllReduceSumEqualsTheInProcessSumBitForBit) {
  if (!shortfall().empty()) GTEST_SKIP() << shortfall();
  SCOPED_TRACE(testing::Message() << "seed " << test_seed());
  Communicator& comm = world();
  for (const bool on_device : {false, true})
    for (const int64_t n : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{1000}, int64_t{4099}}) {
      const auto salt = static_cast<uint64_t>(n);
      std::vector<float> mine = rank_data(comm.rank(), n, salt);
      if (on_device) {
        const DeviceCopy d(mine.data(), mine.size() * sizeof(float));
        comm.all_reduce_sum(d.tensor(DType::f32, {n}));
        d.copy_to(mine.data());
      } else {
        comm.all_reduce_sum(Tensor::view(mine.data(), DType::f32, {n}));
      }
      EXPECT_TRUE(same_bits(mine, in_process_sum(comm.world_size(), n, salt)))
          << n << (on_device ? " device" : " host") << " floats: not InProcessGroup's sum";
      // And a rank-order sum written out here, so both cannot drift together.
      std::vector<float> order(static_cast<size_t>(n), 0.0f);
      for (int r = 0; r < comm.world_size(); ++r) {
        const std::vector<float> theirs = rank_data(r, n, salt);
        for (size_t i = 0; i < order.size(); ++i) order[i] += theirs[i];
      }
      EXPECT_TRUE(same_bits(mine, order)) << n;
    }
}

TEST(NcclRankGroup, SendAndRecvAroundTheRing) {
  if (!shortfall().empty()) GTEST_SKIP() << shortfall();
  Communicator& comm = world();
  const int me = comm.rank(), n = comm.world_size();
  if (n < 2) GTEST_SKIP() << "one rank has no peer";
  const int next = (me + 1) % n, previous = (me + n - 1) % n;
  std::vector<float> out = rank_data(me, 257, 99), in(257, 0.0f);
  const Tensor send = Tensor::view(out.data(), DType::f32, {257});
  const Tensor recv = Tensor::view(in.data(), DType::f32, {257});
  if (me == 0) comm.send(send, next);
  comm.recv(recv, previous);
  if (me != 0) comm.send(send, next);
  EXPECT_EQ(in, rank_data(previous, 257, 99));
  comm.barrier();
}

TEST(NcclRankGroup, HandsOutOnlyThisProcesssRank) {
  if (!shortfall().empty()) GTEST_SKIP() << shortfall();
  const std::shared_ptr<RankGroup> group = make_nccl_rank_group(std::chrono::seconds(60));
  const int me = world_rank(), other = (me + 1) % group->world_size();
  if (other == me) GTEST_SKIP() << "one rank: no other rank to ask for";
  try {
    group->communicator(other);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              str_cat("NCCL rank group: this process is rank ", me, " of ", group->world_size(),
                      "; rank ", other, "'s communicator is in its own process"));
  }
}

// Rank 0 enters an all-reduce that no other rank joins: past the deadline
// it aborts its communicator and throws, naming itself and the cause.
TEST(NcclRankGroup, ACollectiveNoPeerJoinsIsAnErrorNotAHang) {
  if (!shortfall().empty()) GTEST_SKIP() << shortfall();
  if (world().world_size() < 2) GTEST_SKIP() << "one rank has no peer to miss";
  const std::shared_ptr<RankGroup> group = make_nccl_rank_group(std::chrono::seconds(10));
  std::unique_ptr<Communicator> comm = group->communicator(world_rank());
  if (comm->rank() == 0) {
    std::vector<float> data(64, 1.0f);
    const Tensor t = Tensor::view(data.data(), DType::f32, {64});
    try {
      comm->all_reduce_sum(t);
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(str_cat("nccl rank 0 of ", comm->world_size(),
                                                   ": all_reduce_sum (chunks to their owners): "
                                                   "not done after 10000 ms")),
                std::string::npos)
          << e.what();
    }
    EXPECT_THROW(comm->all_reduce_sum(t), Error);  // aborted: no second try
  }
  MPI_Barrier(MPI_COMM_WORLD);
  comm.reset();  // the others' finalize cannot finish with rank 0 gone: aborted in time
}

}  // namespace
}  // namespace hive
