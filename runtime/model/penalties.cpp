#include "runtime/model/penalties.hpp"

#include "base/error.hpp"

namespace hive {

void TokenCounts::assign(std::span<const int32_t> prompt, std::span<const int32_t> output) {
  prompt_.clear();
  output_.clear();
  prompt_.insert(prompt.begin(), prompt.end());
  for (const int32_t token : output) add_output(token);
}

namespace {

float& logit_of(std::span<float> logits, int32_t token) {
  check(token >= 0 && static_cast<size_t>(token) < logits.size(), "penalties: token id ", token,
        " is out of range [0, ", logits.size(), ")");
  return logits[static_cast<size_t>(token)];
}

void repeat(float& logit, float penalty) {
  logit = logit > 0.0f ? logit / penalty : logit * penalty;
}

}  // namespace

void apply_penalties(std::span<float> logits, const SamplingParams& params,
                     const TokenCounts& counts) {
  if (!params.has_penalties()) return;
  const float repetition = params.repetition_penalty;
  // Each token is penalised once: prompt tokens that were also generated
  // are handled with the output.
  if (repetition != 1.0f)
    for (const int32_t token : counts.prompt())
      if (!counts.output().count(token)) repeat(logit_of(logits, token), repetition);
  for (const auto& [token, count] : counts.output()) {
    float& logit = logit_of(logits, token);
    if (repetition != 1.0f) repeat(logit, repetition);
    logit -= params.frequency_penalty * static_cast<float>(count);
    logit -= params.presence_penalty;
  }
}

}  // namespace hive
