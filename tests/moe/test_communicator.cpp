// The in-process communicator: each collective's exact result for world
// sizes 1, 2, 3 and 4, every rank on its own thread.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>

#include "kernels/error.hpp"
#include "moe/in_process_communicator.hpp"

namespace hive {
namespace {

// Runs body(communicator) on world_size threads and joins them.
void run_ranks(int world_size, const std::function<void(Communicator&)>& body) {
  InProcessGroup group(world_size);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world_size; ++rank)
    threads.emplace_back([&group, &body, rank] {
      auto comm = group.communicator(rank);
      body(*comm);
    });
  for (auto& t : threads) t.join();
}

class CommunicatorTest : public ::testing::TestWithParam<int> {};

TEST_P(CommunicatorTest, AllReduceSumsInRankOrder) {
  const int world = GetParam();
  run_ranks(world, [world](Communicator& comm) {
    std::vector<float> data = {static_cast<float>(comm.rank()), 1.0f,
                               0.5f * static_cast<float>(comm.rank() + 1)};
    for (int round = 0; round < 3; ++round) {  // back-to-back collectives reuse the slots
      auto copy = data;
      comm.all_reduce_sum(Tensor::view(copy.data(), DType::f32, {3}));
      const float ranks = static_cast<float>(world * (world - 1) / 2);
      EXPECT_EQ(copy[0], ranks);
      EXPECT_EQ(copy[1], static_cast<float>(world));
      EXPECT_EQ(copy[2], 0.5f * static_cast<float>(world * (world + 1) / 2));
    }
  });
}

TEST_P(CommunicatorTest, AllToAllWithVariableCounts) {
  const int world = GetParam();
  run_ranks(world, [world](Communicator& comm) {
    // Rank s sends (s + d) % 3 rows to rank d; each row is {s, d, index}.
    const int s = comm.rank();
    std::vector<int64_t> send_counts, rows;
    for (int d = 0; d < world; ++d) {
      send_counts.push_back((s + d) % 3);
      for (int64_t i = 0; i < send_counts.back(); ++i) rows.insert(rows.end(), {s, d, i});
    }
    const std::vector<int64_t> recv_counts = comm.exchange_counts(send_counts);
    int64_t total = 0;
    for (int peer = 0; peer < world; ++peer) {
      EXPECT_EQ(recv_counts[static_cast<size_t>(peer)], (peer + s) % 3);
      total += recv_counts[static_cast<size_t>(peer)];
    }
    std::vector<int64_t> received(static_cast<size_t>(total * 3), -1);
    comm.all_to_all(
        Tensor::view(rows.data(), DType::i64, {static_cast<int64_t>(rows.size() / 3), 3}),
        send_counts, Tensor::view(received.data(), DType::i64, {total, 3}), recv_counts);
    size_t at = 0;
    for (int peer = 0; peer < world; ++peer)
      for (int64_t i = 0; i < recv_counts[static_cast<size_t>(peer)]; ++i, at += 3) {
        EXPECT_EQ(received[at], peer);
        EXPECT_EQ(received[at + 1], s);
        EXPECT_EQ(received[at + 2], i);
      }
  });
}

TEST_P(CommunicatorTest, SendRecvAroundARing) {
  const int world = GetParam();
  if (world == 1) GTEST_SKIP() << "no peer to send to";
  run_ranks(world, [world](Communicator& comm) {
    const int next = (comm.rank() + 1) % world, prev = (comm.rank() + world - 1) % world;
    std::vector<float> out = {static_cast<float>(comm.rank()), 42.0f}, in(2, -1.0f);
    // Even ranks send first, odd ranks receive first: no rank waits on itself.
    if (comm.rank() % 2 == 0) {
      comm.send(Tensor::view(out.data(), DType::f32, {2}), next);
      comm.recv(Tensor::view(in.data(), DType::f32, {2}), prev);
    } else {
      comm.recv(Tensor::view(in.data(), DType::f32, {2}), prev);
      comm.send(Tensor::view(out.data(), DType::f32, {2}), next);
    }
    EXPECT_EQ(in[0], static_cast<float>(prev));
    EXPECT_EQ(in[1], 42.0f);
    comm.barrier();
  });
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, CommunicatorTest, ::testing::Values(1, 2, 3, 4));

TEST(Communicator, RejectsCountsForTheWrongWorldSize) {
  run_ranks(1, [](Communicator& comm) {
    const std::vector<int64_t> counts = {1, 1};
    EXPECT_THROW(comm.exchange_counts(counts), Error);
  });
}

// A failed rank aborts the group: a peer waiting in a collective (or arriving
// later; the order is up to the threads) throws instead of hanging, and the
// group stays aborted.
TEST(Communicator, AbortReleasesRanksWaitingInACollective) {
  InProcessGroup group(3);
  std::vector<std::string> errors(2);
  std::vector<std::thread> ranks;
  for (int r = 1; r < 3; ++r)
    ranks.emplace_back([&, r] {
      const auto comm = group.communicator(r);
      float x = 1.0f;
      try {
        comm->all_reduce_sum(Tensor::view(&x, DType::f32, {1}));
      } catch (const Error& e) {
        errors[static_cast<size_t>(r - 1)] = e.what();
      }
    });
  group.abort();  // rank 0 never arrives
  for (std::thread& t : ranks) t.join();
  for (const std::string& error : errors) EXPECT_NE(error.find("aborted"), std::string::npos);
  EXPECT_TRUE(group.aborted());
  EXPECT_THROW(group.communicator(0)->barrier(), Error);
}

}  // namespace
}  // namespace hive
