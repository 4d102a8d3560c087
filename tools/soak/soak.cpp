#include "tools/soak/soak.hpp"

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <unistd.h>
#include <vector>

#include "base/error.hpp"

namespace hive::soak {

namespace {

// What the driver heard of one request.
struct Track {
  int samples_left = 1;
  std::vector<bool> sample_ended;
  bool done = false;
  bool failed = false;
};

class Ledger {
 public:
  void add(const std::string& id, int n) {
    std::lock_guard lock(mutex_);
    Track& t = tracks_[id];
    t.samples_left = n;
    t.sample_ended.assign(static_cast<size_t>(n), false);
    ++outstanding_;
  }

  // Runs on the engine's thread.
  void on_event(const TokenEvent& e) {
    std::lock_guard lock(mutex_);
    Track& t = tracks_.at(e.request_id);
    if (t.done) return violation(e.request_id + ": an event after its request ended");
    if (!e.finished) return;
    if (e.sample_index < 0) {
      t.failed = true;
      t.done = true;
    } else {
      const auto i = static_cast<size_t>(e.sample_index);
      if (i >= t.sample_ended.size()) return violation(e.request_id + ": no such sample");
      if (t.sample_ended[i]) return violation(e.request_id + ": a second terminal event");
      t.sample_ended[i] = true;
      t.failed |= !e.error.empty();
      t.done = --t.samples_left == 0;
    }
    if (!t.done) return;
    ++(t.failed ? failed_ : finished_);
    --outstanding_;
    ended_.notify_all();
  }

  // Waits until at most `limit` requests are in flight; false on timeout.
  bool wait_below(int64_t limit, std::chrono::seconds timeout) {
    std::unique_lock lock(mutex_);
    return ended_.wait_for(lock, timeout, [&] { return outstanding_ <= limit; });
  }

  void fill(Report& r) {
    std::lock_guard lock(mutex_);
    r.finished = finished_;
    r.failed = failed_;
    r.violations = violations_;
    r.first_violation = first_violation_;
    for (const auto& [id, t] : tracks_)
      if (!t.done) {
        ++r.violations;
        if (r.first_violation.empty()) r.first_violation = id + ": never ended";
      }
  }

 private:
  void violation(const std::string& what) {
    if (violations_++ == 0) first_violation_ = what;
  }

  std::mutex mutex_;
  std::condition_variable ended_;
  std::map<std::string, Track> tracks_;
  int64_t outstanding_ = 0, finished_ = 0, failed_ = 0, violations_ = 0;
  std::string first_violation_;
};

Request random_request(int index, std::mt19937_64& rng, int64_t vocab,
                       const std::vector<std::vector<int32_t>>& prefixes) {
  const auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  Request r;
  r.id = "soak-" + std::to_string(index);
  r.prompt_token_ids = prefixes[static_cast<size_t>(pick(0, 3))];
  for (int64_t i = pick(1, 32); i > 0; --i)
    r.prompt_token_ids.push_back(static_cast<int32_t>(pick(3, vocab - 1)));
  r.stop.max_tokens = pick(1, 24);
  r.priority = static_cast<int>(pick(0, 3));
  if (pick(0, 4) == 0) {
    r.n = static_cast<int>(pick(2, 3));
    r.sampling.temperature = 0.8f;
    r.sampling.seed = static_cast<uint64_t>(index);
  }
  return r;
}

}  // namespace

int64_t resident_kib() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

HiveConfig engine_options(const std::string& model, int64_t kv_budget_bytes) {
  HiveConfig o;
  o.model = model;
  o.device = DeviceChoice::cpu;
  o.engine.block_size = 16;
  o.engine.kv_budget = KVBudget{kv_budget_bytes, 0.0};
  o.engine.scheduler.policy = SchedulingPolicy::priority;
  o.engine.scheduler.max_num_seqs = 32;
  return o;
}

Report run(Engine& engine, const Options& options) {
  const auto start = std::chrono::steady_clock::now();
  std::mt19937_64 rng(options.seed);
  const int64_t vocab = engine.model_config().vocab_size;
  std::vector<std::vector<int32_t>> prefixes(4);
  for (auto& prefix : prefixes)
    for (int64_t i = std::uniform_int_distribution<int64_t>(16, 48)(rng); i > 0; --i)
      prefix.push_back(static_cast<int32_t>(std::uniform_int_distribution<int64_t>(3, vocab - 1)(rng)));
  Ledger ledger;
  Report report;
  std::multimap<int, std::string> cancels;  // at request index -> id
  std::uniform_int_distribution<int> percent(0, 99);
  for (int i = 0; i < options.num_requests; ++i) {
    check(ledger.wait_below(options.concurrency - 1, std::chrono::seconds(120)),
          "soak: no request ended for 120 s");
    Request r = random_request(i, rng, vocab, prefixes);
    ++report.requests;
    if (percent(rng) < options.drop_percent) {
      // Read a few events, then drop the stream: that cancels the request.
      TokenStream stream = engine.submit(r);
      for (int k = std::uniform_int_distribution<int>(0, 3)(rng); k > 0; --k)
        if (!stream.next()) break;
      ++report.dropped;
    } else {
      const std::string id = r.id;
      ledger.add(id, r.n);
      engine.submit(std::move(r), [&ledger](const TokenEvent& e) { ledger.on_event(e); });
      if (percent(rng) < options.cancel_percent)
        cancels.emplace(i + std::uniform_int_distribution<int>(0, options.concurrency)(rng), id);
    }
    for (auto it = cancels.begin(); it != cancels.end() && it->first <= i;) {
      engine.cancel(it->second);
      ++report.cancelled;
      it = cancels.erase(it);
    }
    if (options.fault_every > 0 && (i + 1) % options.fault_every == 0) {
      engine.inject_worker_fault(0);
      ++report.faults;
    }
    if (i + 1 == options.checkpoint) {
      ledger.wait_below(0, std::chrono::seconds(120));
      report.rss_checkpoint_kib = resident_kib();
    }
  }
  for (const auto& [at, id] : cancels) engine.cancel(id);
  report.cancelled += static_cast<int64_t>(cancels.size());
  ledger.wait_below(0, std::chrono::seconds(120));
  // Dropped streams' cancels may still be on their way.
  EngineMetrics m = engine.metrics();
  for (int tries = 0; tries < 200 && (m.num_running > 0 || m.num_waiting > 0); ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    m = engine.metrics();
  }
  report.blocks_in_use = m.num_blocks - m.num_free_blocks;
  report.preemptions = m.num_preemptions;
  report.generated_tokens = m.num_generated_tokens;
  report.rss_end_kib = resident_kib();
  ledger.fill(report);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace hive::soak
