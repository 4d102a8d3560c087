#pragma once
// for_each_task: the one way the CPU ops split work across threads.
#include <algorithm>
#include <atomic>
#include <cstdint>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/thread_pool.hpp"

namespace hive::cpu {

// Runs task(t, scratch) for t in [0, num_tasks), each thread with its own
// scratch from make_scratch(). Tasks are independent outputs, so results do
// not depend on the split or on the thread count. The tasks go to the shared
// thread pool only when `work` (multiply-adds) reaches kMinParallelWork and
// the pool has more than one thread; otherwise, and when the pool is busy
// (a nested call, another rank's job), they run inline: handing a decode
// step's few hundred small ops to other threads costs more than it saves.
// Threads take chunks of tasks from a shared counter, each a quarter of
// what is left per thread (guided): large at first, so the counter's cache
// line is not fought over once per task, down to single tasks at the end,
// so the threads finish together (fixed chunks of an eighth per thread left
// one thread a whole chunk behind at the end of every op). The first
// exception stops the rest and reaches the caller.
template <class MakeScratch, class Task>
void for_each_task(int64_t num_tasks, int64_t work, const MakeScratch& make_scratch,
                   const Task& task) {
  if (work >= kMinParallelWork && num_tasks > 1 && !ThreadPool::in_job()) {
    const std::shared_ptr<ThreadPool> pool = cpu_thread_pool();
    if (pool->num_threads() > 1) {
      const int64_t share = 4 * pool->num_threads();
      std::atomic<int64_t> next{0};
      const bool ran = pool->try_run([&](int) {
        auto scratch = make_scratch();
        try {
          for (;;) {
            int64_t begin = next.load(std::memory_order_relaxed), end = 0;
            do {
              end = begin + std::max<int64_t>(1, (num_tasks - begin) / share);
            } while (begin < num_tasks &&
                     !next.compare_exchange_weak(begin, end, std::memory_order_relaxed));
            if (begin >= num_tasks) break;
            for (int64_t t = begin; t < std::min(end, num_tasks); ++t) task(t, scratch);
          }
        } catch (...) {
          next.store(num_tasks, std::memory_order_relaxed);
          throw;
        }
      });
      if (ran) return;
    }
  }
  auto scratch = make_scratch();
  for (int64_t t = 0; t < num_tasks; ++t) task(t, scratch);
}

}  // namespace hive::cpu
