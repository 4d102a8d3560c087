#include "runtime/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/error.hpp"

namespace hive {

void validate(const SamplingParams& p) {
  check(std::isfinite(p.temperature) && p.temperature >= 0.0f, "temperature must be >= 0 (got ",
        p.temperature, ")");
  check(p.top_k >= 0, "top_k must be >= 0 (got ", p.top_k, ")");
  check(p.top_p > 0.0f && p.top_p <= 1.0f, "top_p must be in (0, 1] (got ", p.top_p, ")");
}

int32_t argmax(std::span<const float> logits) {
  check(!logits.empty(), "argmax of no logits");
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

Sampler::Sampler(const SamplingParams& params, int64_t num_sampled)
    : params_(params), rng_(params.seed) {
  validate(params);
  if (params.temperature != 0.0f && num_sampled > 0)
    rng_.discard(static_cast<unsigned long long>(num_sampled));
}

int32_t Sampler::sample(std::span<const float> logits) {
  if (params_.temperature == 0.0f) return argmax(logits);
  // Candidates in descending logit order (ties: lower id first), cut to top_k.
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  const size_t keep =
      params_.top_k > 0 ? std::min(ids.size(), static_cast<size_t>(params_.top_k)) : ids.size();
  std::partial_sort(
      ids.begin(), ids.begin() + static_cast<ptrdiff_t>(keep), ids.end(),
      [&](int32_t a, int32_t b) {
        return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] ||
               (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
      });
  ids.resize(keep);
  std::vector<double> probs(keep);
  const double max_logit = logits[static_cast<size_t>(ids[0])];
  double total = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    probs[i] = std::exp((logits[static_cast<size_t>(ids[i])] - max_logit) / params_.temperature);
    total += probs[i];
  }
  // Nucleus: the shortest prefix whose probability reaches top_p.
  size_t nucleus = keep;
  if (params_.top_p < 1.0f) {
    double cumulative = 0.0;
    for (size_t i = 0; i < keep; ++i) {
      cumulative += probs[i] / total;
      if (cumulative >= params_.top_p) {
        nucleus = i + 1;
        break;
      }
    }
  }
  const double mass =
      std::accumulate(probs.begin(), probs.begin() + static_cast<ptrdiff_t>(nucleus), 0.0);
  // A draw in [0, mass) from the top 53 bits: the same on every platform.
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53 * mass;
  double cumulative = 0.0;
  for (size_t i = 0; i < nucleus; ++i) {
    cumulative += probs[i];
    if (u < cumulative) return ids[i];
  }
  return ids[nucleus - 1];
}

}  // namespace hive
