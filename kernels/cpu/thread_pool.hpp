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

  // Calls body(participant) once on each of num_threads() threads, the caller
  // being participant 0, and returns when every call has returned; the first
  // exception thrown is rethrown here. Returns false without calling anything
  // when the pool is busy: a call from inside a job (nested) or while another
  // thread's job runs (several ranks in one process). The caller then does
  // the work itself, which gives the same results (see parallel.hpp).
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

  // The current job, published under mutex_ by bumping generation_.
  std::mutex mutex_;
  std::condition_variable job_posted_, job_done_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> remaining_{0};  // worker threads still in the job
  JobFunction function_ = nullptr;
  const void* context_ = nullptr;
  std::exception_ptr error_;
  bool stopping_ = false;
};

// The pool every CPU op shares, created on first use. Shared ownership, so
// that set_cpu_threads never destroys a pool a job is still using.
std::shared_ptr<ThreadPool> cpu_thread_pool();
int cpu_threads();
// Replaces the shared pool with one of n threads (n >= 1). Ops running on
// other threads meanwhile run inline; call it between steps.
void set_cpu_threads(int n);

}  // namespace hive::cpu
