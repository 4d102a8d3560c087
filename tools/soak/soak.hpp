#pragma once
// The soak run: many requests through hive::Engine with everything that
// goes wrong in service at once: random prompt and output lengths, n > 1,
// priorities, cancels at random points, streams dropped mid-way, shared
// prompt prefixes (prefix caching), a KV pool small enough to preempt, and
// injected worker faults. It checks the engine's promises, not its speed:
// every request hears exactly one terminal event per sample and nothing
// after it, no KV block stays in use, and memory does not grow with the
// number of requests served.
#include <cstdint>
#include <string>

#include "actors/engine.hpp"

namespace hive::soak {

struct Options {
  int num_requests = 10000;
  uint64_t seed = 1;
  int concurrency = 32;      // requests in flight at once
  int fault_every = 2500;    // a worker fault after this many requests; 0: none
  int cancel_percent = 10;   // requests cancelled while in flight
  int drop_percent = 5;      // requests read through a stream dropped mid-way
  int checkpoint = 1000;     // requests after which the resident memory is taken
};

struct Report {
  int64_t requests = 0;
  int64_t finished = 0;   // every sample ended without an error
  int64_t failed = 0;     // a sample or the request ended with an error
  int64_t cancelled = 0;  // cancels sent
  int64_t dropped = 0;    // streams dropped mid-way
  int64_t faults = 0;     // worker faults injected
  // Protocol violations: a second terminal event, an event after the end,
  // a request that never ended. Must be 0.
  int64_t violations = 0;
  std::string first_violation;
  int64_t blocks_in_use = 0;  // once everything ended; must be 0
  int64_t preemptions = 0;
  int64_t generated_tokens = 0;
  int64_t rss_checkpoint_kib = 0;  // after Options::checkpoint requests
  int64_t rss_end_kib = 0;
  double seconds = 0.0;
};

// A launch for the soak: `model` with a small KV pool, prefix caching and
// the priority policy.
HiveConfig engine_options(const std::string& model, int64_t kv_budget_bytes);

Report run(Engine& engine, const Options& options);

// The process's resident memory, from /proc/self/statm.
int64_t resident_kib();

}  // namespace hive::soak
