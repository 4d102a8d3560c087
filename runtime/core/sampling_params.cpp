#include "runtime/core/sampling_params.hpp"

#include <cmath>
#include <random>

#include "kernels/error.hpp"

namespace hive {

void validate(const SamplingParams& p) {
  check(std::isfinite(p.temperature) && p.temperature >= 0.0f, "temperature must be >= 0 (got ",
        p.temperature, ")");
  check(p.top_k >= 0, "top_k must be >= 0 (got ", p.top_k, ")");
  check(p.top_p > 0.0f && p.top_p <= 1.0f, "top_p must be in (0, 1] (got ", p.top_p, ")");
}

uint64_t random_seed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

}  // namespace hive
