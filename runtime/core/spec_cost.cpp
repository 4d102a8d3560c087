#include "runtime/core/spec_cost.hpp"

#include <algorithm>
#include <cmath>

namespace hive {

double StepCost::seconds(int64_t tokens) const {
  if (points.empty()) return 0.0;
  if (points.size() == 1 || tokens <= points.front().first) return points.front().second;
  size_t i = 1;
  while (i + 1 < points.size() && points[i].first < tokens) ++i;
  const auto [n0, t0] = points[i - 1];
  const auto [n1, t1] = points[i];
  const double slope = (t1 - t0) / static_cast<double>(n1 - n0);
  return std::max(0.0, t0 + slope * static_cast<double>(tokens - n0));
}

double estimated_acceptance(int64_t drafted, int64_t accepted) {
  return static_cast<double>(accepted + 1) / static_cast<double>(drafted + 2);
}

int adaptive_gamma(const SpecCostModel& cost, double alpha, int64_t step_tokens, int max_gamma) {
  const double step = cost.target.seconds(step_tokens);
  if (step <= 0.0) return max_gamma;
  // One more draft token: one more token to verify, and one more draft pass
  // (a draft model's passes are batched over the sequences: its cost per
  // sequence is at most the pass's).
  const double marginal = (cost.target.seconds(step_tokens + 1) - step) +
                          (cost.draft.empty() ? 0.0 : cost.draft.seconds(1));
  const double relative = marginal / step;
  int gamma = 0;
  double gain = alpha;
  while (gamma < max_gamma && gain >= relative) {
    ++gamma;
    gain *= alpha;
  }
  return gamma;
}

bool drafts_pay(const SpecCostModel& cost, const std::vector<double>& alphas,
                const std::vector<int>& gammas, int64_t step_tokens, int64_t num_seqs) {
  if (cost.target.empty()) return true;
  int64_t draft_tokens = 0;
  int max_gamma = 0;
  double expected = 0.0;  // extra tokens
  for (size_t i = 0; i < gammas.size(); ++i) {
    draft_tokens += gammas[i];
    max_gamma = std::max(max_gamma, gammas[i]);
    double power = 1.0;
    for (int g = 0; g < gammas[i]; ++g) expected += power *= alphas[i];
  }
  if (draft_tokens == 0) return false;
  const double without = cost.target.seconds(step_tokens);
  // The draft model runs max_gamma passes over the drafting sequences.
  const double drafting =
      cost.draft.empty() ? 0.0
                         : max_gamma * cost.draft.seconds(static_cast<int64_t>(gammas.size()));
  const double with = cost.target.seconds(step_tokens + draft_tokens) + drafting;
  const auto seqs = static_cast<double>(num_seqs);
  return (seqs + expected) / with > seqs / without;
}

}  // namespace hive
