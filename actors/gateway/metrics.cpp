#include "actors/gateway/metrics.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace hive::gateway {

namespace {

void header(std::string& out, const std::string& name, const char* type, const char* help) {
  out += str_cat("# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

template <class T>
void sample(std::string& out, const std::string& name, const std::string& labels, T value) {
  out += str_cat(name, "{", labels, "} ", value, "\n");
}

// Latency buckets in seconds, as vLLM's.
std::vector<double> latency_buckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
          0.75,  1.0,   2.5,  5.0,  7.5,  10.0, 20.0, 40.0, 80.0};
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  const auto bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  ++counts_[static_cast<size_t>(bucket)];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name,
                       const std::string& labels) const {
  int64_t cumulative = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? str_cat(bounds_[i]) : "+Inf";
    out += str_cat(name, "_bucket{", labels, ",le=\"", le, "\"} ", cumulative, "\n");
  }
  out += str_cat(name, "_sum{", labels, "} ", sum_, "\n");
  out += str_cat(name, "_count{", labels, "} ", count_, "\n");
}

Metrics::Metrics()
    : time_to_first_token(latency_buckets()),
      inter_token_latency(latency_buckets()),
      e2e_request_latency(latency_buckets()) {}

std::string Metrics::render(const EngineMetrics& engine, const std::string& model_name) const {
  const std::string model = str_cat("model_name=\"", model_name, "\"");
  std::string out;
  header(out, "hive:num_requests_running", "gauge", "Requests in the running batch.");
  sample(out, "hive:num_requests_running", model, engine.num_running);
  header(out, "hive:num_requests_waiting", "gauge", "Requests waiting to be scheduled.");
  sample(out, "hive:num_requests_waiting", model, engine.num_waiting);
  header(out, "hive:kv_cache_usage_perc", "gauge", "Fraction of KV-cache blocks in use (0-1).");
  const double used = engine.num_blocks > 0 ? 1.0 - static_cast<double>(engine.num_free_blocks) /
                                                        static_cast<double>(engine.num_blocks)
                                            : 0.0;
  sample(out, "hive:kv_cache_usage_perc", model, used);
  header(out, "hive:num_preemptions_total", "counter", "Preemptions (recompute or swap).");
  sample(out, "hive:num_preemptions_total", model, engine.num_preemptions);
  header(out, "hive:spec_decode_num_drafts_total", "counter",
         "Sequence-steps that verified speculative drafts.");
  sample(out, "hive:spec_decode_num_drafts_total", model, engine.spec_num_drafts);
  header(out, "hive:spec_decode_num_draft_tokens_total", "counter", "Draft tokens verified.");
  sample(out, "hive:spec_decode_num_draft_tokens_total", model, engine.spec_num_draft_tokens);
  header(out, "hive:spec_decode_num_accepted_tokens_total", "counter",
         "Draft tokens the target accepted.");
  sample(out, "hive:spec_decode_num_accepted_tokens_total", model, engine.spec_num_accepted_tokens);
  header(out, "hive:spec_decode_num_accepted_tokens_per_pos", "counter",
         "Draft tokens accepted at each draft position.");
  for (size_t i = 0; i < engine.spec_accepted_per_position.size(); ++i)
    sample(out, "hive:spec_decode_num_accepted_tokens_per_pos",
           str_cat(model, ",position=\"", i, "\""), engine.spec_accepted_per_position[i]);
  header(out, "hive:prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.");
  sample(out, "hive:prefix_cache_queries_total", model, engine.prefix_queried_tokens);
  header(out, "hive:prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache.");
  sample(out, "hive:prefix_cache_hits_total", model, engine.prefix_hit_tokens);
  header(out, "hive:prompt_tokens_total", "counter", "Prompt tokens of requests served.");
  sample(out, "hive:prompt_tokens_total", model, prompt_tokens);
  header(out, "hive:generation_tokens_total", "counter", "Tokens generated for requests served.");
  sample(out, "hive:generation_tokens_total", model, generation_tokens);
  header(out, "hive:request_success_total", "counter", "Finished sequences (choices), by finish reason.");
  for (const char* reason : {"stop", "length", "abort"}) {
    const auto it = finished_requests.find(reason);
    sample(out, "hive:request_success_total",
           str_cat(model, ",finished_reason=\"", reason, "\""),
           it == finished_requests.end() ? 0 : it->second);
  }
  header(out, "hive:request_rejected_total", "counter", "Requests refused with 429 (queue full).");
  sample(out, "hive:request_rejected_total", model, rejected_requests);
  header(out, "hive:connection_rejected_total", "counter",
         "Connections refused with 503 (max_connections open).");
  sample(out, "hive:connection_rejected_total", model, rejected_connections);
  header(out, "hive:time_to_first_token_seconds", "histogram", "Time to the first token.");
  time_to_first_token.render(out, "hive:time_to_first_token_seconds", model);
  header(out, "hive:inter_token_latency_seconds", "histogram", "Time between tokens of a sample.");
  inter_token_latency.render(out, "hive:inter_token_latency_seconds", model);
  header(out, "hive:e2e_request_latency_seconds", "histogram", "Request latency, end to end.");
  e2e_request_latency.render(out, "hive:e2e_request_latency_seconds", model);
  if (engine.num_experts > 0) {
    header(out, "hive:expert_load_imbalance", "gauge", "Per MoE layer: max / mean expert load.");
    for (size_t l = 0; l < engine.expert_imbalance.size(); ++l)
      sample(out, "hive:expert_load_imbalance", str_cat(model, ",layer=\"", l, "\""),
             engine.expert_imbalance[l]);
    header(out, "hive:expert_tokens_total", "counter", "Tokens routed to each expert.");
    for (size_t i = 0; i < engine.expert_load.size(); ++i)
      sample(out, "hive:expert_tokens_total",
             str_cat(model, ",layer=\"", i / static_cast<size_t>(engine.num_experts),
                     "\",expert=\"", i % static_cast<size_t>(engine.num_experts), "\""),
             engine.expert_load[i]);
  }
  return out;
}

}  // namespace hive::gateway
