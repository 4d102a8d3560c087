// The CPU ops' thread pool: every task runs exactly once whatever the thread
// count, nested and concurrent callers are served (inline when the pool is
// busy), and an exception in a task reaches the caller.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/thread_pool.hpp"
#include "tests/common/cpu_settings.hpp"

namespace hive::cpu {
namespace {

constexpr int64_t kBigWork = kMinParallelWork;  // enough to use the pool

// Runs num_tasks tasks through for_each_task and counts each one's runs.
std::vector<int> run_counts(int64_t num_tasks) {
  std::vector<std::atomic<int>> runs(static_cast<size_t>(num_tasks));
  for_each_task(
      num_tasks, kBigWork, [] { return 0; },
      [&](int64_t t, int&) { runs[static_cast<size_t>(t)].fetch_add(1); });
  std::vector<int> counts;
  for (const auto& r : runs) counts.push_back(r.load());
  return counts;
}

class ThreadPoolTest : public ::testing::Test {
 private:
  test::KeptCpuSettings kept_;
};

TEST_F(ThreadPoolTest, EveryTaskRunsExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    set_cpu_threads(threads);
    for (int64_t num_tasks : {0, 1, 2, 7, 1000}) {
      const std::vector<int> counts = run_counts(num_tasks);
      for (int64_t t = 0; t < num_tasks; ++t)
        ASSERT_EQ(counts[static_cast<size_t>(t)], 1)
            << "task " << t << " of " << num_tasks << ", " << threads << " threads";
    }
  }
}

// Workers join while the caller's own call runs; one that joins runs once,
// on its own thread. The caller holds its call open until all have joined.
TEST_F(ThreadPoolTest, EveryParticipantRunsOnceOnItsOwnThread) {
  ThreadPool pool(4);
  for (int round = 0; round < 20; ++round) {
    std::vector<std::atomic<int>> calls(4);
    std::vector<std::thread::id> ids(4);
    ASSERT_TRUE(pool.try_run([&](int participant) {
      ids[static_cast<size_t>(participant)] = std::this_thread::get_id();
      calls[static_cast<size_t>(participant)].fetch_add(1);
      if (participant == 0)
        while (calls[1].load() + calls[2].load() + calls[3].load() < 3) std::this_thread::yield();
    }));
    for (const auto& c : calls) EXPECT_EQ(c.load(), 1);
    EXPECT_EQ(ids[0], std::this_thread::get_id());  // the caller works too
    for (size_t a = 0; a < ids.size(); ++a)
      for (size_t b = a + 1; b < ids.size(); ++b) EXPECT_NE(ids[a], ids[b]);
  }
}

// A worker that joins late finds the job closed and does not run it.
TEST_F(ThreadPoolTest, LateWorkersStayOut) {
  ThreadPool pool(3);
  for (int round = 0; round < 200; ++round) {
    std::atomic<int> calls{0};
    ASSERT_TRUE(pool.try_run([&](int) { calls.fetch_add(1); }));
    const int after_return = calls.load();
    EXPECT_GE(after_return, 1);
    EXPECT_LE(after_return, 3);
    std::this_thread::yield();
    EXPECT_EQ(calls.load(), after_return) << "a worker ran after try_run returned";
  }
}

TEST_F(ThreadPoolTest, NestedCallsRunInline) {
  set_cpu_threads(2);
  std::atomic<int> inner_runs{0};
  for_each_task(
      4, kBigWork, [] { return 0; },
      [&](int64_t, int&) {
        EXPECT_TRUE(ThreadPool::in_job());
        for_each_task(
            3, kBigWork, [] { return 0; }, [&](int64_t, int&) { inner_runs.fetch_add(1); });
      });
  EXPECT_EQ(inner_runs.load(), 12);
  EXPECT_FALSE(ThreadPool::in_job());
}

// Several ranks of one process share the pool: whoever finds it busy runs its
// tasks itself, and every caller gets all its tasks done.
TEST_F(ThreadPoolTest, ConcurrentCallersAllComplete) {
  set_cpu_threads(2);
  constexpr int kCallers = 4, kRounds = 200;
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c)
    callers.emplace_back([&] {
      for (int round = 0; round < kRounds; ++round)
        for (int count : run_counts(5 + round % 7))
          if (count != 1) failures.fetch_add(1);
    });
  for (std::thread& caller : callers) caller.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(ThreadPoolTest, TaskExceptionsReachTheCaller) {
  for (int threads : {1, 2}) {
    set_cpu_threads(threads);
    std::atomic<int> runs{0};
    EXPECT_THROW(for_each_task(
                     100, kBigWork, [] { return 0; },
                     [&](int64_t t, int&) {
                       runs.fetch_add(1);
                       if (t == 10) throw std::runtime_error("task 10 failed");
                     }),
                 std::runtime_error);
    EXPECT_LE(runs.load(), 100);
    // The pool is usable afterwards.
    for (int count : run_counts(50)) EXPECT_EQ(count, 1);
  }
}

TEST_F(ThreadPoolTest, ResizingWhileAnotherThreadRunsIsSafe) {
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::thread runner([&] {
    while (!stop.load())
      for (int count : run_counts(9))
        if (count != 1) failures.fetch_add(1);
  });
  for (int i = 0; i < 50; ++i) set_cpu_threads(1 + i % 3);
  stop.store(true);
  runner.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(ThreadPoolTest, RejectsZeroThreads) {
  EXPECT_ANY_THROW(ThreadPool pool(0));
}

}  // namespace
}  // namespace hive::cpu
