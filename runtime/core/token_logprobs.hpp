#pragma once
// The log-probabilities that come with a sampled token when its request asks
// for logprobs. They are the model's raw ones, log_softmax of the logits
// before penalties, temperature and filtering, as vLLM returns them by
// default (logprobs_mode "raw_logprobs"): the numbers do not change with the
// sampling parameters, and a greedy pick's alternatives read as the model saw
// them. The output processor formats them; the core only carries them.
#include <cstdint>
#include <vector>

namespace hive {

struct TokenLogprobs {
  float logprob = 0.0f;  // the sampled token's
  // The N most likely tokens, most likely first (ties: the lower id first),
  // and their logprobs; N is the request's SamplingParams::logprobs.
  std::vector<int32_t> top_token_ids;
  std::vector<float> top_logprobs;
};

}  // namespace hive
