#pragma once
// A generation request as a caller submits it, and the rules that end it:
// max_tokens, end-of-sequence and stop token ids, and stop strings matched on
// the detokenized output (the stop string itself is never part of the text).
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/sampling_params.hpp"

namespace hive {

struct StopConditions {
  int64_t max_tokens = 16;
  bool ignore_eos = false;
  std::vector<int32_t> stop_token_ids;
  std::vector<std::string> stop_strings;  // need a detokenizer
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

// The text of some token ids. The scheduler takes one so that stop strings
// work without depending on a particular tokenizer.
using Detokenize = std::function<std::string(std::span<const int32_t>)>;

// Checks the stop conditions after a new token was appended to `output`
// (the generated ids, the new one last). With stop strings (and a
// detokenizer), an output not ended by an end-of-sequence or stop token is
// decoded into `text`, cut before a stop string found in it; otherwise
// nothing is decoded (the scheduler makes the text once, when the sequence
// finishes: decoding the whole output every step is quadratic).
FinishReason check_stop(const StopConditions& stop, std::span<const int32_t> eos_token_ids,
                        std::span<const int32_t> output, const Detokenize& detokenize,
                        std::string& text);

// How much of `text` can be streamed now: all of it except a tail that could
// still grow into a stop string.
size_t stop_safe_length(std::string_view text, std::span<const std::string> stop_strings);

}  // namespace hive
