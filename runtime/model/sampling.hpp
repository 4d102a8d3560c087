#pragma once
// Choosing the next token from logits: greedy when temperature is 0, else
// temperature, top-k and top-p (nucleus) filtering and a draw from a seeded
// generator, so a fixed seed gives a fixed output.
#include <cstdint>
#include <random>
#include <span>

#include "runtime/core/sampling_params.hpp"

namespace hive {

// The index of the largest logit; ties go to the lower index. NaN logits are
// never chosen; logits that are all NaN or -inf are an error.
int32_t argmax(std::span<const float> logits);

class Sampler {
 public:
  // Each sample() with temperature > 0 draws once from the generator, so a
  // sampler made for a sequence that already sampled `num_sampled` tokens
  // (by a worker that was replaced) skips as many draws and continues the
  // same stream.
  explicit Sampler(const SamplingParams& params, int64_t num_sampled = 0);
  // top_k keeps every token tied with the k-th largest logit. Tokens with a
  // +inf logit share all the probability; NaN logits get none; logits that
  // are all NaN or -inf are an error.
  int32_t sample(std::span<const float> logits);

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
};

}  // namespace hive
