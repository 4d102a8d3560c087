#pragma once
// What a request asks of the sampler: temperature, top-k, top-p and the
// seed. Part of a request (the core validates it and draws a missing seed at
// admission); the sampler itself runs in the model room (model/sampling.hpp).
#include <cstdint>
#include <optional>

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

}  // namespace hive
