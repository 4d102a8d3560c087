// The MPI communicator, run as processes (ctest starts it under mpirun with
// 2, 3 and 4 ranks). Each rank builds its inputs from the shared seed and
// its rank, so it can compute what every peer sends it; all_to_all must
// deliver those bytes exactly, and all_reduce_sum must equal InProcessGroup's
// rank-order sum bit for bit (an in-process group of the same size runs the
// same collectives inside each process).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <utility>

#include "base/error.hpp"
#include "parallel/in_process_communicator.hpp"
#include "parallel/mpi_communicator.hpp"
#include "tests/common/random.hpp"
#include "tests/parallel/collective_reference.hpp"

namespace hive {
namespace {

using test::in_process_sum;
using test::rank_data;
using test::rows_between;
using test::same_bits;

using test::test_seed;

std::unique_ptr<Communicator>& world() {
  static std::unique_ptr<Communicator> comm = make_mpi_communicator();
  return comm;
}

std::vector<uint8_t> row_bytes_between(int from, int to, int64_t rows, size_t row, uint64_t salt) {
  std::mt19937_64 rng(test_seed() ^ (salt * 977 + static_cast<uint64_t>(from * 64 + to) * 31));
  std::vector<uint8_t> bytes(static_cast<size_t>(rows) * row);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

TEST(MpiCommunicator, SpansTheWorld) {
  Communicator& comm = *world();
  int size = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  EXPECT_EQ(comm.world_size(), size);
  EXPECT_EQ(comm.rank(), rank);
  EXPECT_GE(size, 2) << "run under mpirun -np 2 or more";
}

TEST(MpiCommunicator, AllToAllDeliversEveryPeersRows) {
  SCOPED_TRACE(testing::Message() << "seed " << test_seed());
  Communicator& comm = *world();
  const int me = comm.rank(), n = comm.world_size();
  // Rows of 3 f32, 5 bf16 and 1 i64: several row sizes, one exchange each.
  for (const auto& [dtype, width] : {std::pair{DType::f32, 3}, {DType::bf16, 5}, {DType::i64, 1}}) {
    const uint64_t salt = static_cast<uint64_t>(width);
    const size_t row = dtype_size(dtype) * static_cast<size_t>(width);
    std::vector<int64_t> send_counts, recv_counts;
    std::vector<uint8_t> send, expected;
    for (int peer = 0; peer < n; ++peer) {
      send_counts.push_back(rows_between(me, peer, salt));
      const auto out = row_bytes_between(me, peer, send_counts.back(), row, salt);
      send.insert(send.end(), out.begin(), out.end());
      recv_counts.push_back(rows_between(peer, me, salt));
      const auto in = row_bytes_between(peer, me, recv_counts.back(), row, salt);
      expected.insert(expected.end(), in.begin(), in.end());
    }
    EXPECT_EQ(comm.exchange_counts(send_counts), recv_counts);
    const auto rows = [&](std::vector<uint8_t>& bytes) {
      return Tensor::view(bytes.data(), dtype,
                          {static_cast<int64_t>(bytes.size() / row), int64_t{width}});
    };
    std::vector<uint8_t> received(expected.size(), 0xA5);
    comm.all_to_all(rows(send), send_counts, rows(received), recv_counts);
    EXPECT_EQ(received, expected) << "rows of " << width << " x " << dtype_name(dtype);
  }
}

TEST(MpiCommunicator, AllReduceSumEqualsTheInProcessSumBitForBit) {
  SCOPED_TRACE(testing::Message() << "seed " << test_seed());
  Communicator& comm = *world();
  // Fewer elements than ranks, uneven chunks, and a size in the thousands.
  for (const int64_t n : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{1000}, int64_t{4099}}) {
    const auto salt = static_cast<uint64_t>(n);
    std::vector<float> mine = rank_data(comm.rank(), n, salt);
    comm.all_reduce_sum(Tensor::view(mine.data(), DType::f32, {n}));
    const std::vector<float> want = in_process_sum(comm.world_size(), n, salt);
    EXPECT_TRUE(same_bits(mine, want)) << n << " elements: the sum differs from InProcessGroup's";
    // And from a plain rank-order sum written out here, so that both
    // implementations cannot drift together.
    std::vector<float> order(static_cast<size_t>(n), 0.0f);
    for (int r = 0; r < comm.world_size(); ++r) {
      const std::vector<float> theirs = rank_data(r, n, salt);
      for (size_t i = 0; i < order.size(); ++i) order[i] += theirs[i];
    }
    EXPECT_TRUE(same_bits(mine, order)) << n;
  }
}

TEST(MpiCommunicator, SendAndRecvAroundTheRing) {
  Communicator& comm = *world();
  const int me = comm.rank(), n = comm.world_size();
  const int next = (me + 1) % n, previous = (me + n - 1) % n;
  std::vector<float> out = rank_data(me, 257, 99), in(257, 0.0f);
  // Rank 0 sends first, every other rank receives first: the messages run
  // once around the ring, with no two ranks waiting on each other.
  const Tensor send = Tensor::view(out.data(), DType::f32, {257});
  const Tensor recv = Tensor::view(in.data(), DType::f32, {257});
  if (me == 0) comm.send(send, next);
  comm.recv(recv, previous);
  if (me != 0) comm.send(send, next);
  EXPECT_EQ(in, rank_data(previous, 257, 99));
}

TEST(MpiCommunicator, ARecvOfAnotherSizeNamesBothSizes) {
  Communicator& comm = *world();
  // Ranks 0 and 1 talk; the others only join the barriers.
  std::vector<float> buffer(8, 1.0f);
  if (comm.rank() == 0) comm.send(Tensor::view(buffer.data(), DType::f32, {8}), 1);
  if (comm.rank() == 1) {
    try {
      comm.recv(Tensor::view(buffer.data(), DType::f32, {4}), 0);
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(), "recv: rank 0 sent 32 bytes, rank 1 expects 16");
    }
  }
  comm.barrier();
  // The message was taken off the channel: the next one arrives intact.
  std::vector<float> second(3, 0.0f), sent{1.5f, 2.5f, 3.5f};
  if (comm.rank() == 0) comm.send(Tensor::view(sent.data(), DType::f32, {3}), 1);
  if (comm.rank() == 1) {
    comm.recv(Tensor::view(second.data(), DType::f32, {3}), 0);
    EXPECT_EQ(second, sent);
  }
  comm.barrier();
}

TEST(MpiCommunicator, BadArgumentsAreErrorsBeforeAnyTransfer) {
  Communicator& comm = *world();
  std::vector<float> x(4);
  const Tensor t = Tensor::view(x.data(), DType::f32, {4});
  EXPECT_THROW(comm.send(t, comm.rank()), Error);
  EXPECT_THROW(comm.recv(t, comm.world_size()), Error);
  const std::vector<int64_t> wrong(static_cast<size_t>(comm.world_size()) + 1, 0);
  EXPECT_THROW(comm.all_to_all(t, wrong, t, wrong), Error);
  std::vector<int32_t> ints(4);
  EXPECT_THROW(comm.all_reduce_sum(Tensor::view(ints.data(), DType::i32, {4})), Error);
  comm.barrier();
}

}  // namespace
}  // namespace hive

namespace hive {
namespace {

TEST(MpiRankGroup, HandsOutOnlyThisProcesssRank) {
  const std::shared_ptr<RankGroup> group = make_mpi_rank_group();
  Communicator& comm = *world();
  EXPECT_EQ(group->world_size(), comm.world_size());
  const auto mine = group->communicator(comm.rank());
  EXPECT_EQ(mine->rank(), comm.rank());
  const int other = (comm.rank() + 1) % comm.world_size();
  try {
    group->communicator(other);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              str_cat("MPI rank group: this process is rank ", comm.rank(), " of ",
                      comm.world_size(), "; rank ", other,
                      "'s communicator is in its own process"));
  }
  mine->barrier();  // the group's communicator reaches the other processes
}

}  // namespace
}  // namespace hive
