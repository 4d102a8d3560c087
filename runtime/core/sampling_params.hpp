#pragma once
// What a request asks of the sampler: penalties, temperature, min-p, top-k,
// top-p, the seed and how many logprobs to return. Part of a request (the
// core validates it and draws a missing seed at admission); the sampler
// itself runs in the model room (model/sampling.hpp). Ranges follow vLLM's
// SamplingParams; every default means "off".
#include <cstdint>
#include <optional>

namespace hive {

// vLLM's default max_logprobs and OpenAI's top_logprobs limit.
inline constexpr int kMaxLogprobs = 20;

struct SamplingParams {
  float temperature = 0.0f;  // 0: greedy
  int top_k = 0;             // 0: no limit
  float top_p = 1.0f;        // 1: no limit
  // The generator's seed. None: a random one, drawn once per request when
  // the scheduler admits it (so a preempted or resumed request keeps its
  // stream), as vLLM and the OpenAI API treat a missing seed.
  std::optional<uint64_t> seed;
  // Keeps tokens whose probability is at least min_p times the top one's
  // (after temperature). 0: off. In [0, 1].
  float min_p = 0.0f;
  // OpenAI's, over the tokens generated so far: logit -= presence if the
  // token occurred, and -= frequency x its count. 0: off. In [-2, 2].
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  // Hugging Face's, over the prompt and the generated tokens: a positive
  // logit is divided by it, a negative one multiplied. 1: off. > 0.
  float repetition_penalty = 1.0f;
  // Top alternatives to return with each sampled token's logprob (0: the
  // sampled token's alone). None: no logprobs. In [0, kMaxLogprobs].
  std::optional<int> logprobs = std::nullopt;

  // Whether the sampler needs the sequence's token history.
  bool has_penalties() const {
    return presence_penalty != 0.0f || frequency_penalty != 0.0f || repetition_penalty != 1.0f;
  }
};

// A seed from the system's entropy source.
uint64_t random_seed();

// Throws hive::Error naming the first out-of-range value (temperature < 0,
// top_p not in (0, 1], top_k < 0, min_p not in [0, 1], a presence or
// frequency penalty not in [-2, 2], repetition_penalty <= 0, logprobs not in
// [0, 20]).
void validate(const SamplingParams& params);

}  // namespace hive
