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

double estimated_acceptance(int64_t judged, int64_t accepted) {
  return static_cast<double>(accepted + 1) / static_cast<double>(judged + 2);
}

std::vector<int> plan_draft_lengths(const SpecCostModel& cost, const std::vector<double>& alphas,
                                    const std::vector<int>& caps, int64_t step_tokens) {
  std::vector<int> lengths(caps.size(), 0);
  if (cost.target.empty()) return caps;
  const auto seqs = static_cast<int64_t>(caps.size());
  // A draft model's pass runs over every drafting sequence: its cost per
  // draft token is its share of the pass.
  const double draft_share =
      cost.draft.empty() ? 0.0 : cost.draft.seconds(seqs) / static_cast<double>(seqs);
  double expected = static_cast<double>(seqs);  // tokens the step adds without drafts
  double seconds = cost.target.seconds(step_tokens);
  int64_t tokens = step_tokens;
  std::vector<double> gain(alphas);  // of each sequence's next draft token
  for (int position = 1; position <= *std::max_element(caps.begin(), caps.end()); ++position) {
    bool added = false;
    for (size_t s = 0; s < caps.size(); ++s) {
      if (lengths[s] != position - 1 || position > caps[s]) continue;
      const double extra = cost.target.seconds(tokens + 1) - cost.target.seconds(tokens) + draft_share;
      if (gain[s] * seconds <= expected * extra) continue;  // gain / extra <= expected / seconds
      lengths[s] = position;
      expected += gain[s];
      seconds += extra;
      ++tokens;
      gain[s] *= alphas[s];
      added = true;
    }
    if (!added) break;
  }
  return lengths;
}

}  // namespace hive
