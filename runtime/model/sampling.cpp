#include "runtime/model/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "base/error.hpp"

namespace hive {

namespace {

// NaN ranks below every number: it is never chosen while anything else can be.
bool ranks_before(float a, float b) {
  return a > b || (std::isnan(b) && !std::isnan(a));
}

void check_some_finite_or_inf(std::span<const float> logits, int32_t best) {
  const float top = logits[static_cast<size_t>(best)];
  check(!std::isnan(top) && top != -std::numeric_limits<float>::infinity(),
        "no token can be sampled: all ", logits.size(), " logits are NaN or -inf");
}

}  // namespace

int32_t argmax(std::span<const float> logits) {
  check(!logits.empty(), "argmax of no logits");
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (ranks_before(logits[i], logits[static_cast<size_t>(best)])) best = static_cast<int32_t>(i);
  check_some_finite_or_inf(logits, best);
  return best;
}

Sampler::Sampler(const SamplingParams& params, int64_t num_sampled)
    : params_(params), rng_(params.seed ? *params.seed : random_seed()) {
  validate(params);
  if (params.temperature != 0.0f && num_sampled > 0)
    rng_.discard(static_cast<unsigned long long>(num_sampled));
}

std::span<const float> Sampler::penalize(std::span<const float> logits) {
  if (!params_.has_penalties()) return logits;
  penalized_.assign(logits.begin(), logits.end());
  apply_penalties(penalized_, params_, counts_);
  return penalized_;
}

int32_t Sampler::sample(std::span<const float> logits) {
  logits = penalize(logits);
  const int32_t token = params_.temperature == 0.0f ? argmax(logits) : draw(logits);
  if (params_.has_penalties()) counts_.add_output(token);
  return token;
}

Verified Sampler::verify(std::span<const float> logits, size_t vocab,
                         std::span<const int32_t> drafts,
                         std::span<const std::vector<float>> draft_probs) {
  const size_t gamma = drafts.size();
  check(logits.size() == (gamma + 1) * vocab, "verify: ", gamma, " drafts need ", gamma + 1,
        " rows of logits");
  check(draft_probs.empty() || draft_probs.size() == gamma, "verify: ", gamma,
        " drafts with ", draft_probs.size(), " distributions");
  Verified out;
  for (size_t i = 0; i <= gamma; ++i) {
    const std::span<const float> row = penalize(logits.subspan(i * vocab, vocab));
    const bool greedy = params_.temperature == 0.0f;
    int32_t token = 0;
    bool accepted = false;
    if (greedy) {
      token = argmax(row);
      accepted = i < gamma && token == drafts[i];
    } else if (i == gamma) {
      token = draw_from(sampling_probs(row, params_), uniform(rng_));
    } else {
      const auto x = static_cast<size_t>(drafts[i]);
      check(x < vocab, "verify: draft token ", x, " is outside the vocabulary");
      const std::vector<double> p = sampling_probs(row, params_);
      std::vector<double> q(vocab, 0.0);
      if (draft_probs.empty()) {
        q[x] = 1.0;
      } else {
        check(draft_probs[i].size() == vocab, "verify: a draft distribution over ",
              draft_probs[i].size(), " tokens, not ", vocab);
        std::copy(draft_probs[i].begin(), draft_probs[i].end(), q.begin());
      }
      accepted = accept_draft(p[x], q[x], uniform(rng_));
      token = accepted ? drafts[i] : draw_residual(p, q, uniform(rng_));
    }
    if (params_.has_penalties()) counts_.add_output(token);
    out.tokens.push_back(token);
    if (!accepted) break;
    ++out.num_accepted;
  }
  return out;
}

Candidates shape_candidates(std::span<const float> logits, const SamplingParams& params) {
  check(!logits.empty(), "sampling from no logits");
  const auto logit = [&](int32_t id) { return logits[static_cast<size_t>(id)]; };
  // Candidates in descending logit order (ties: lower id first; NaN last),
  // cut to top_k, keeping every candidate tied with the k-th (as HF's and
  // vLLM's top-k mask only logits below the k-th).
  Candidates c;
  std::vector<int32_t>& ids = c.ids;
  ids.resize(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  const auto before = [&](int32_t a, int32_t b) {
    return ranks_before(logit(a), logit(b)) || (!ranks_before(logit(b), logit(a)) && a < b);
  };
  size_t keep = ids.size();
  if (params.top_k > 0 && static_cast<size_t>(params.top_k) < ids.size()) {
    const auto k = static_cast<ptrdiff_t>(params.top_k);
    std::nth_element(ids.begin(), ids.begin() + k - 1, ids.end(), before);
    const float kth = logit(ids[static_cast<size_t>(k - 1)]);
    const auto tail =
        std::partition(ids.begin() + k, ids.end(), [&](int32_t id) { return logit(id) == kth; });
    keep = static_cast<size_t>(tail - ids.begin());
  }
  std::sort(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(keep), before);
  ids.resize(keep);
  check_some_finite_or_inf(logits, ids[0]);
  // A +inf logit takes all the probability, shared with any other +inf.
  const bool infinite = std::isinf(logit(ids[0]));
  std::vector<double>& probs = c.weights;
  probs.resize(keep);
  const double max_logit = logit(ids[0]);
  double total = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    const float l = logit(ids[i]);
    probs[i] = infinite        ? (l == logit(ids[0]) ? 1.0 : 0.0)
               : std::isnan(l) ? 0.0
                               : std::exp((l - max_logit) / params.temperature);
  }
  // probs[i] is p_i / max(p), falling along ids: min-p keeps a prefix, never
  // empty (probs[0] is 1).
  if (params.min_p > 0.0f)
    keep = static_cast<size_t>(
        std::find_if(probs.begin(), probs.end(),
                     [&](double p) { return p < static_cast<double>(params.min_p); }) -
        probs.begin());
  for (size_t i = 0; i < keep; ++i) total += probs[i];
  // Nucleus: the shortest prefix whose probability reaches top_p.
  size_t nucleus = keep;
  if (params.top_p < 1.0f) {
    double cumulative = 0.0;
    for (size_t i = 0; i < keep; ++i) {
      cumulative += probs[i] / total;
      if (cumulative >= params.top_p) {
        nucleus = i + 1;
        break;
      }
    }
  }
  ids.resize(nucleus);
  probs.resize(nucleus);
  c.mass = std::accumulate(probs.begin(), probs.end(), 0.0);
  return c;
}

std::vector<double> sampling_probs(std::span<const float> logits, const SamplingParams& params) {
  std::vector<double> p(logits.size(), 0.0);
  if (params.temperature == 0.0f) {
    p[static_cast<size_t>(argmax(logits))] = 1.0;
    return p;
  }
  const Candidates c = shape_candidates(logits, params);
  for (size_t i = 0; i < c.ids.size(); ++i) p[static_cast<size_t>(c.ids[i])] = c.weights[i] / c.mass;
  return p;
}

int32_t Sampler::draw(std::span<const float> logits) {
  const Candidates c = shape_candidates(logits, params_);
  // A draw in [0, mass) from the top 53 bits: the same on every platform.
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53 * c.mass;
  double cumulative = 0.0;
  for (size_t i = 0; i < c.ids.size(); ++i) {
    cumulative += c.weights[i];
    if (u < cumulative) return c.ids[i];
  }
  return c.ids.back();
}

}  // namespace hive
