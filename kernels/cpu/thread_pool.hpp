#pragma once
// The CPU ops' thread pool: a fixed set of threads that sleep on a condition
// variable between jobs (after a spin of a few microseconds, so the ops of one
// decode step do not each pay a wake-up), instead of OpenMP teams that spin
// for milliseconds and starve whatever else shares the cores.
//
// Size: set_cpu_threads(n), or at first use OMP_NUM_THREADS (the one name
// users, scripts and our ctest harness already set for "compute threads"; its
// first number, as OpenMP reads "4,2"), else the hardware threads.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace hive::cpu {

class ThreadPool {
 public:
  // num_threads counts the caller, which works too: n - 1 threads are started.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls body(0) on the caller and body(p) on each worker p that joins
  // before the caller's own call returns (at most once each, on distinct
  // threads), and returns when every call has returned; the first exception
  // thrown is rethrown here. A worker the OS has not scheduled by then is
  // not waited for: on a loaded machine the caller does its share instead
  // of idling (the body must share out its work, as for_each_task does).
  // Returns false without calling anything when the pool is busy: a call
  // from inside a job (nested) or while another thread's job runs (several
  // ranks in one process). The caller then does the work itself, which
  // gives the same results (see parallel.hpp).
  template <class Body>
  bool try_run(const Body& body) {
    return try_run_erased(
        [](const void* context, int participant) {
          (*static_cast<const Body*>(context))(participant);
        },
        &body);
  }

  // Whether the calling thread is inside a job of any pool.
  static bool in_job();

 private:
  using JobFunction = void (*)(const void* context, int participant);

  bool try_run_erased(JobFunction function, const void* context);
  void work(int participant);
  void run_participant(int participant);

  const int num_threads_;
  std::vector<std::thread> threads_;
  std::mutex run_mutex_;  // held by the caller for a whole job

  // The current job: 2 * its generation, + 1 while workers may join. Set
  // under mutex_ when a job is posted (after function_ and context_), so a
  // sleeping worker cannot miss it; cleared to even by the caller when its
  // own call returns. A worker counts itself in active_ first and then
  // checks the state, so the caller either sees it (and waits) or it sees
  // the job closed (and stays out).
  std::mutex mutex_;
  std::condition_variable job_posted_, job_done_;
  std::atomic<uint64_t> job_state_{0};
  std::atomic<int> active_{0};
  std::atomic<bool> stopping_{false};
  uint64_t generation_ = 0;
  JobFunction function_ = nullptr;
  const void* context_ = nullptr;
  std::exception_ptr error_;
};

// The pool every CPU op shares, created on first use. Shared ownership, so
// that set_cpu_threads never destroys a pool a job is still using.
std::shared_ptr<ThreadPool> cpu_thread_pool();
int cpu_threads();
// Replaces the shared pool with one of n threads (n >= 1). Ops running on
// other threads meanwhile run inline; call it between steps.
void set_cpu_threads(int n);

}  // namespace hive::cpu
