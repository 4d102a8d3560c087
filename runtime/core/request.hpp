#pragma once
// A generation request as the engine core sees it, and the rules that end
// it: max_tokens, end-of-sequence and stop token ids. The core stops on token
// ids only; text and stop strings belong to the output processor above it
// (runtime/engine/output_processor.hpp).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/core/sampling_params.hpp"

namespace hive {

struct StopConditions {
  int64_t max_tokens = 16;
  bool ignore_eos = false;
  std::vector<int32_t> stop_token_ids;
};

struct Request {
  std::string id;
  std::vector<int32_t> prompt_token_ids;
  SamplingParams
      sampling;  // sample i of n draws with seed sampling.seed + i (a random seed if none)
  StopConditions stop;
  int n = 1;         // parallel samples; they share the prompt's KV blocks
  int priority = 0;  // under the priority policy, lower values run first
  // Mixed into every block hash: requests with different keys never share
  // cached blocks (a cache salt, an adapter id).
  std::vector<uint64_t> cache_extra_keys;
  bool return_logits = false;  // keep the logits of every sampled position
};

enum class FinishReason : uint8_t { none, length, eos, stop_token, stop_string, aborted };
std::string_view finish_reason_name(FinishReason reason);

// Checks the stop conditions after a new token was appended to `output`
// (the generated ids, the new one last).
FinishReason check_stop(const StopConditions& stop, std::span<const int32_t> eos_token_ids,
                        std::span<const int32_t> output);

}  // namespace hive
