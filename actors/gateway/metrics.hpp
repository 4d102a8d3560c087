#pragma once
// /metrics in Prometheus' text format, with vLLM's names under `hive:`.
// The gateway's own figures (latencies, tokens, finished requests by reason)
// are kept here; the engine's (running, waiting, KV usage, preemptions,
// prefix cache, expert load) come from Engine::metrics() when rendered.
// Used from the gateway's one I/O thread only.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "actors/messages.hpp"

namespace hive::gateway {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;  // per bucket, not cumulative; the last is +Inf
  double sum_ = 0;
  int64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();

  Histogram time_to_first_token;  // seconds
  Histogram inter_token_latency;  // seconds
  Histogram e2e_request_latency;  // seconds
  int64_t prompt_tokens = 0;
  int64_t generation_tokens = 0;
  // Finished sequences (choices), by finish reason: stop, length, abort.
  std::map<std::string, int64_t> finished_requests;
  int64_t rejected_requests = 0;                      // 429: the queue was full
  int64_t rejected_connections = 0;                   // 503: max_connections were open

  std::string render(const EngineMetrics& engine, const std::string& model_name) const;
};

}  // namespace hive::gateway
