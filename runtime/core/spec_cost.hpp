#pragma once
// Load-aware control of speculative decoding. Whether drafts pay depends on
// what a step costs: while decode is bound by reading the weights, a step
// of N + D tokens costs about what N cost and drafts are nearly free; once
// the batch is large enough to be bound by compute, every draft token costs
// as much as a decoded one, and rejected ones are pure loss. So the engine
// measures at start what a forward pass of n tokens takes (the target's, and
// the draft model's if there is one) and the scheduler plans with it:
//
//   per sequence, from its acceptance so far α (counted with one accepted
//   and one rejected draft as a prior): γ_s = the largest g <= γ with
//   α^g >= the measured cost of one more token relative to a step, so the
//   expected gain of the g-th draft (α^g tokens) covers its cost;
//   per step: drafts are planned only if the expected tokens per second with
//   them, (N + Σ E_s) / (t(N + Σ γ_s) + draft time), beats N / t(N), where
//   E_s = α + α² + ... + α^γ_s; otherwise this step runs without, and the
//   next step decides again.
#include <cstdint>
#include <utility>
#include <vector>

namespace hive {

// Seconds of one forward pass by tokens in it, measured; piecewise linear
// between the points, and beyond the last along its last segment.
struct StepCost {
  std::vector<std::pair<int64_t, double>> points;  // (tokens, seconds), increasing tokens

  bool empty() const { return points.empty(); }
  double seconds(int64_t tokens) const;
};

struct SpecCostModel {
  StepCost target;
  StepCost draft;  // empty for a drafter that runs no model (n-gram lookup)
};

// The acceptance rate estimate from a sequence's counts, with the prior.
double estimated_acceptance(int64_t drafted, int64_t accepted);

// γ_s for a sequence with acceptance `alpha` in a step of `step_tokens`
// tokens, at most max_gamma.
int adaptive_gamma(const SpecCostModel& cost, double alpha, int64_t step_tokens, int max_gamma);

// Whether drafting `gammas` (with acceptances `alphas`) pays in a step that
// decodes `num_seqs` sequences among `step_tokens` tokens.
bool drafts_pay(const SpecCostModel& cost, const std::vector<double>& alphas,
                const std::vector<int>& gammas, int64_t step_tokens, int64_t num_seqs);

}  // namespace hive
