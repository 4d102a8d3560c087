#include "kernels/cpu/thread_pool.hpp"

#include <chrono>
#include <cstdlib>
#include <string>
#include <utility>

#include "base/error.hpp"

namespace hive::cpu {

namespace {

// A worker that just finished a job spins this long for the next before it
// sleeps: a decode step runs its ops back to back, and a futex wake-up per op
// would cost more than the op on a small model. Short enough not to starve
// another process on a shared machine.
constexpr auto kSpinBeforeSleep = std::chrono::microseconds(50);

thread_local bool tls_in_job = false;

inline void cpu_relax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

// Spins until done() or the spin time is up; returns done().
template <class Done>
bool spin_until(const Done& done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinBeforeSleep;
  for (int i = 0;; ++i) {
    if (done()) return true;
    cpu_relax();
    if (i % 64 == 63 && std::chrono::steady_clock::now() >= deadline) return done();
  }
}

int threads_from_environment() {
  const char* value = std::getenv("OMP_NUM_THREADS");
  if (value == nullptr || *value == '\0') {
    const unsigned hardware = std::thread::hardware_concurrency();
    return hardware > 0 ? static_cast<int>(hardware) : 1;
  }
  // OpenMP's form: a list for nested levels ("4,2"); the first is ours.
  const std::string text(value);
  size_t used = 0;
  int n = 0;
  try {
    n = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  check(used > 0 && n >= 1 && (used == text.size() || text[used] == ','),
        "OMP_NUM_THREADS must be a positive integer (got '", text, "')");
  return n;
}

std::mutex& shared_pool_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::shared_ptr<ThreadPool>& shared_pool() {
  static std::shared_ptr<ThreadPool> pool;
  return pool;
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) : num_threads_(num_threads) {
  check(num_threads >= 1, "thread pool: need at least 1 thread (got ", num_threads, ")");
  threads_.reserve(static_cast<size_t>(num_threads - 1));
  for (int participant = 1; participant < num_threads; ++participant)
    threads_.emplace_back([this, participant] { work(participant); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_.store(true);
  }
  job_posted_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

bool ThreadPool::in_job() {
  return tls_in_job;
}

void ThreadPool::run_participant(int participant) {
  tls_in_job = true;
  try {
    function_(context_, participant);
  } catch (...) {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = std::current_exception();
  }
  tls_in_job = false;
}

bool ThreadPool::try_run_erased(JobFunction function, const void* context) {
  // Checked first: a participant of a running job must not try_lock a mutex
  // its own job holds.
  if (tls_in_job) return false;
  std::unique_lock run_lock(run_mutex_, std::try_to_lock);
  if (!run_lock.owns_lock()) return false;
  uint64_t open_state = 0;
  {
    std::lock_guard lock(mutex_);
    function_ = function;
    context_ = context;
    error_ = nullptr;
    open_state = 2 * ++generation_ + 1;
    job_state_.store(open_state);
  }
  job_posted_.notify_all();
  run_participant(0);
  job_state_.store(open_state - 1);  // closed: no worker joins from now on
  const auto all_left = [this] { return active_.load() == 0; };
  if (!spin_until(all_left)) {
    std::unique_lock lock(mutex_);
    job_done_.wait(lock, all_left);
  }
  std::exception_ptr error;
  {
    std::lock_guard lock(mutex_);
    error = std::exchange(error_, nullptr);
  }
  if (error) std::rethrow_exception(error);
  return true;
}

void ThreadPool::work(int participant) {
  uint64_t joined = 0;  // the state of the last job this worker ran
  for (;;) {
    const auto posted = [&] {
      const uint64_t state = job_state_.load();
      return stopping_.load() || ((state & 1) && state != joined);
    };
    if (!spin_until(posted)) {
      std::unique_lock lock(mutex_);
      job_posted_.wait(lock, posted);
    }
    if (stopping_.load()) return;
    const uint64_t state = job_state_.load();
    active_.fetch_add(1);
    if (job_state_.load() == state && (state & 1)) {
      joined = state;
      run_participant(participant);
    }
    if (active_.fetch_sub(1) == 1) {
      // Under the mutex, so that the caller cannot check, miss this and
      // then sleep forever.
      std::lock_guard lock(mutex_);
      job_done_.notify_one();
    }
  }
}

std::shared_ptr<ThreadPool> cpu_thread_pool() {
  std::lock_guard lock(shared_pool_mutex());
  std::shared_ptr<ThreadPool>& pool = shared_pool();
  if (!pool) pool = std::make_shared<ThreadPool>(threads_from_environment());
  return pool;
}

int cpu_threads() {
  return cpu_thread_pool()->num_threads();
}

void set_cpu_threads(int n) {
  auto pool = std::make_shared<ThreadPool>(n);
  std::lock_guard lock(shared_pool_mutex());
  shared_pool().swap(pool);
  // The old pool goes when its last job lets go of it.
}

}  // namespace hive::cpu
