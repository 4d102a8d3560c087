#pragma once
// Choosing the next token from logits: greedy when temperature is 0, else
// temperature, top-k and top-p (nucleus) filtering and a draw from a seeded
// generator, so a fixed seed gives a fixed output.
#include <cstdint>
#include <optional>
#include <random>
#include <span>

namespace hive {

struct SamplingParams {
  float temperature = 0.0f;  // 0: greedy
  int top_k = 0;             // 0: no limit
  float top_p = 1.0f;        // 1: no limit
  // The generator's seed. None: a random one, drawn once per request when
  // the scheduler admits it (so a preempted or resumed request keeps its
  // stream), as vLLM and the OpenAI API treat a missing seed.
  std::optional<uint64_t> seed;
};

// A seed from the system's entropy source.
uint64_t random_seed();

// Throws hive::Error on out-of-range values (temperature < 0, top_p not in (0, 1], top_k < 0).
void validate(const SamplingParams& params);

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
