// The in-process communicator: each collective's exact result for world
// sizes 1, 2, 3 and 4, every rank on its own thread.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "base/error.hpp"
#include "parallel/in_process_communicator.hpp"

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

// Runs body(communicator) on world_size threads and returns each rank's
// error message ("" where it returned).
std::vector<std::string> errors_of_ranks(int world_size,
                                         const std::function<void(Communicator&)>& body) {
  std::vector<std::string> errors(static_cast<size_t>(world_size));
  run_ranks(world_size, [&](Communicator& comm) {
    try {
      body(comm);
    } catch (const Error& e) {
      errors[static_cast<size_t>(comm.rank())] = e.what();
    }
  });
  return errors;
}

// Ranks that disagree get an error, every one of them, and nothing is read
// out of bounds (ASan checks the last).
TEST(Communicator, RanksThatDisagreeAllFailWithoutReadingOutOfBounds) {
  // all_reduce_sum over 3 floats on rank 0 and 1 on rank 1.
  for (const std::string& error : errors_of_ranks(2, [](Communicator& comm) {
         std::vector<float> data(comm.rank() == 0 ? 3 : 1, 1.0f);
         comm.all_reduce_sum(
             Tensor::view(data.data(), DType::f32, {static_cast<int64_t>(data.size())}));
       }))
    EXPECT_NE(error.find("all_reduce_sum: rank 0 passed 3 elements, rank 1 passed 1"),
              std::string::npos)
        << error;
  // Rows of 4 floats against rows of 2.
  for (const std::string& error : errors_of_ranks(2, [](Communicator& comm) {
         const int64_t width = comm.rank() == 0 ? 4 : 2;
         std::vector<float> send(static_cast<size_t>(2 * width)), recv(send.size());
         const std::vector<int64_t> counts = {1, 1};
         comm.all_to_all(Tensor::view(send.data(), DType::f32, {2, width}), counts,
                         Tensor::view(recv.data(), DType::f32, {2, width}), counts);
       }))
    EXPECT_NE(error.find("bytes per row"), std::string::npos) << error;
  // Different collectives.
  for (const std::string& error : errors_of_ranks(2, [](Communicator& comm) {
         float x = 1.0f;
         if (comm.rank() == 0) comm.all_reduce_sum(Tensor::view(&x, DType::f32, {1}));
         if (comm.rank() == 1) comm.barrier();
       }))
    EXPECT_NE(
        error.find("collective mismatch: rank 0 called all_reduce_sum, rank 1 called barrier"),
        std::string::npos)
        << error;
  // Rank 1 expects a row that rank 0 does not send: rank 1 fails after rank 0
  // published a large buffer, and rank 0 must not free it under rank 1's read.
  const std::vector<std::string> errors = errors_of_ranks(2, [](Communicator& comm) {
    const int64_t rows = 1 << 16;
    std::vector<float> send(static_cast<size_t>(rows)), recv(static_cast<size_t>(rows) + 1);
    const std::vector<int64_t> send_counts =
        comm.rank() == 0 ? std::vector<int64_t>{0, rows} : std::vector<int64_t>{rows, 0};
    const std::vector<int64_t> recv_counts =
        comm.rank() == 0 ? std::vector<int64_t>{0, rows} : std::vector<int64_t>{rows + 1, 0};
    comm.all_to_all(Tensor::view(send.data(), DType::f32, {rows, 1}), send_counts,
                    Tensor::view(recv.data(), DType::f32,
                                 {static_cast<int64_t>(recv.size()) - (comm.rank() == 0), 1}),
                    recv_counts);
  });
  EXPECT_NE(errors[1].find("rank 0 sends 65536 rows to rank 1, which expects 65537"),
            std::string::npos)
      << errors[1];
  // Rank 0's own exchange matched; it carries on (its peer's fault aborts the group).
  EXPECT_EQ(errors[0], "");
}

TEST(Communicator, RejectsNegativeCountsAndMismatchedPointToPoint) {
  for (const std::string& error : errors_of_ranks(1, [](Communicator& comm) {
         float x = 0.0f;
         const std::vector<int64_t> counts = {-1};
         comm.all_to_all(Tensor::view(&x, DType::f32, {0}), counts,
                         Tensor::view(&x, DType::f32, {0}), counts);
       }))
    EXPECT_NE(error.find("negative count"), std::string::npos) << error;
  const std::vector<std::string> errors = errors_of_ranks(2, [](Communicator& comm) {
    std::vector<float> data(4);
    if (comm.rank() == 0) comm.send(Tensor::view(data.data(), DType::f32, {4}), 1);
    if (comm.rank() == 1) comm.recv(Tensor::view(data.data(), DType::f32, {2}), 0);
  });
  EXPECT_NE(errors[0].find("send: rank 0 sent 16 bytes, rank 1 expects 8"), std::string::npos)
      << errors[0];
  EXPECT_NE(errors[1].find("recv: rank 0 sent 16 bytes, rank 1 expects 8"), std::string::npos)
      << errors[1];
}

// An abort while ranks copy from each other: each rank finishes reading
// before any leaves, so no buffer is freed under a reader (ASan checks; the
// old protocol freed one here in most runs), and the group is aborted for
// the next collective. The abort comes later and later over the rounds,
// from before the ranks enter the collective to after they left it, so it
// sweeps across the copy (about a millisecond).
TEST(Communicator, AnAbortDuringACopyLetsEveryReaderFinish) {
  const int64_t rows = 1 << 20;
  const int rounds = 40;
  int thrown_inside = 0, thrown_after = 0;
  for (int round = 0; round < rounds; ++round) {
    InProcessGroup group(2);
    std::atomic<bool> go = false;
    std::atomic<int> entered = 0, left = 0;
    std::vector<int> outcome(2);  // 1: threw in the collective, 2: after it
    std::vector<std::thread> ranks;
    for (int r = 0; r < 2; ++r)
      ranks.emplace_back([&, r] {
        const auto comm = group.communicator(r);
        std::vector<float> send(static_cast<size_t>(2 * rows), 1.0f),
            recv(static_cast<size_t>(2 * rows));
        const std::vector<int64_t> counts = {rows, rows};
        while (!go) std::this_thread::yield();
        ++entered;
        try {
          comm->all_to_all(Tensor::view(send.data(), DType::f32, {2 * rows, 1}), counts,
                           Tensor::view(recv.data(), DType::f32, {2 * rows, 1}), counts);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("aborted"), std::string::npos) << e.what();
          outcome[static_cast<size_t>(r)] = 1;
          return;
        }
        ++left;
        EXPECT_EQ(recv.front(), 1.0f);
        EXPECT_EQ(recv.back(), 1.0f);
        EXPECT_THROW(
            {
              for (;;) comm->barrier();  // until the abort lands
            },
            Error);
        outcome[static_cast<size_t>(r)] = 2;
      });
    if (round == 0) group.abort();  // before anyone enters
    go = true;
    while (entered < 2) std::this_thread::yield();
    if (round == rounds - 1) {
      while (left < 2) std::this_thread::yield();  // after both left
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50 * round));
    }
    group.abort();
    for (std::thread& t : ranks) t.join();
    EXPECT_TRUE(group.aborted());
    for (const int o : outcome) (o == 1 ? thrown_inside : thrown_after) += 1;
  }
  std::printf("abort sweep: %d ranks stopped inside the collective, %d after it\n", thrown_inside,
              thrown_after);
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
