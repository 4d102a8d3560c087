#pragma once
// The workload of the multi-rank model tests (expert and tensor parallel):
// seeded random prompts of 1 to 37 tokens, lengths and output lengths mixed
// so that ranks run out of work at different steps, logits returned, run
// under a small token budget so that long prompts prefill in chunks.
#include <random>
#include <vector>

#include "base/error.hpp"
#include "runtime/engine/llm_engine.hpp"
#include "tests/common/random.hpp"

namespace hive::test {

inline std::vector<Request> parallel_requests(int64_t vocab, int count) {
  std::mt19937_64 rng(test_seed());
  std::uniform_int_distribution<int32_t> token(3, static_cast<int32_t>(vocab) - 1);
  std::vector<Request> requests;
  for (int i = 0; i < count; ++i) {
    Request r;
    r.id = str_cat("p", i);
    r.prompt_token_ids.resize(static_cast<size_t>(1 + (i * 11) % 37));
    for (int32_t& id : r.prompt_token_ids) id = token(rng);
    r.stop.max_tokens = 2 + (i * 5) % 9;
    r.stop.ignore_eos = true;
    r.return_logits = true;
    requests.push_back(std::move(r));
  }
  return requests;
}

inline EngineConfig parallel_engine_config() {
  EngineConfig config;
  config.kv_budget.bytes = int64_t{4} << 20;
  config.scheduler.max_num_batched_tokens = 32;
  return config;
}

}  // namespace hive::test
