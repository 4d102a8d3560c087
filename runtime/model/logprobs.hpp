#pragma once
// A sampled token's logprobs (runtime/core/token_logprobs.hpp says which:
// the raw model's, before any sampling parameter touches the logits).
#include <cstdint>
#include <span>

#include "runtime/core/token_logprobs.hpp"

namespace hive {

// log_softmax(logits)[token] and the `num_top` largest entries (ties: lower
// id first; NaN last), computed in double. With +inf logits, those share the
// probability and every other token gets -inf.
TokenLogprobs compute_logprobs(std::span<const float> logits, int32_t token, int num_top);

}  // namespace hive
