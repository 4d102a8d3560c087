#include "runtime/core/sampling_params.hpp"

#include <cmath>
#include <random>

#include "base/error.hpp"

namespace hive {

void validate(const SamplingParams& p) {
  check(std::isfinite(p.temperature) && p.temperature >= 0.0f, "temperature must be >= 0 (got ",
        p.temperature, ")");
  check(p.top_k >= 0, "top_k must be >= 0 (got ", p.top_k, ")");
  check(p.top_p > 0.0f && p.top_p <= 1.0f, "top_p must be in (0, 1] (got ", p.top_p, ")");
  check(p.min_p >= 0.0f && p.min_p <= 1.0f, "min_p must be in [0, 1] (got ", p.min_p, ")");
  check(p.presence_penalty >= -2.0f && p.presence_penalty <= 2.0f,
        "presence_penalty must be in [-2, 2] (got ", p.presence_penalty, ")");
  check(p.frequency_penalty >= -2.0f && p.frequency_penalty <= 2.0f,
        "frequency_penalty must be in [-2, 2] (got ", p.frequency_penalty, ")");
  check(std::isfinite(p.repetition_penalty) && p.repetition_penalty > 0.0f,
        "repetition_penalty must be > 0 (got ", p.repetition_penalty, ")");
  check(!p.logprobs || (*p.logprobs >= 0 && *p.logprobs <= kMaxLogprobs),
        "logprobs must be in [0, ", kMaxLogprobs, "] (got ", p.logprobs.value_or(0), ")");
}

uint64_t random_seed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

}  // namespace hive
