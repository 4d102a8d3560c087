#pragma once
// Load-aware control of speculative decoding. Whether drafts pay depends on
// what a step costs: while decode is bound by reading the weights, a step
// of N + D tokens costs about what N cost and drafts are nearly free; once
// the batch is large enough to be bound by compute, every draft token costs
// as much as a decoded one, and rejected ones are pure loss. So the engine
// measures at start what a forward pass of n tokens takes (the target's, and
// the draft model's if there is one) and the scheduler plans with it:
//
//   a sequence's g-th draft token is expected to add α^g tokens, α its
//   acceptance so far: accepted drafts over judged ones (the accepted and
//   each window's first rejected; the verifier never judged those after
//   it, and counting them as rejected would bias α low, the more so the
//   longer the window), with one accepted and one rejected as a prior. It
//   costs what one more token adds to the step, t(T + 1) -
//   t(T), plus its share of a draft model pass. Starting from the step
//   without drafts (its decoding sequences' tokens E over its time T), draft
//   tokens are added, first positions first, while each one's gain per
//   second beats the step's E / T so far: what maximises tokens per second.
//   Where none does (a large batch, bound by compute), the step runs
//   without drafts, and the next step decides again.
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
double estimated_acceptance(int64_t judged, int64_t accepted);

// The draft tokens for each of the step's decoding sequences (acceptances
// `alphas`, at most `caps` each) in a step of `step_tokens` tokens without
// drafts; all zero when drafts do not pay.
std::vector<int> plan_draft_lengths(const SpecCostModel& cost, const std::vector<double>& alphas,
                                    const std::vector<int>& caps, int64_t step_tokens);

}  // namespace hive
