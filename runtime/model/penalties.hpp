#pragma once
// The repetition, frequency and presence penalties, applied to a sequence's
// raw logits before temperature (as vLLM does), from per-token counts of its
// history. For a token t with c(t) generated occurrences:
//
//   in prompt or output:  l = l > 0 ? l / repetition : l * repetition   (HF)
//   c(t) > 0:             l -= frequency * c(t);  l -= presence          (OpenAI)
//
// in that order, in float, as vLLM's apply_penalties computes them.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "runtime/core/sampling_params.hpp"

namespace hive {

class TokenCounts {
 public:
  // Replaces the counts with those of `prompt` and `output`.
  void assign(std::span<const int32_t> prompt, std::span<const int32_t> output);
  void add_output(int32_t token) { ++output_[token]; }
  const std::unordered_set<int32_t>& prompt() const { return prompt_; }
  const std::unordered_map<int32_t, int64_t>& output() const { return output_; }

 private:
  std::unordered_set<int32_t> prompt_;           // each prompt token, once
  std::unordered_map<int32_t, int64_t> output_;  // generated token -> occurrences
};

// Penalises `logits` in place. Throws hive::Error for a counted token
// outside the logits.
void apply_penalties(std::span<float> logits, const SamplingParams& params,
                     const TokenCounts& counts);

}  // namespace hive
