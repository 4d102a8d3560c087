#include "runtime/model/rejection_sampler.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace hive {

double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

bool accept_draft(double p, double q, double u) {
  // u < p / q without dividing: q is > 0 for a token the draft drew.
  return q <= 0.0 ? p > 0.0 : u * q < p;
}

int32_t draw_from(const std::vector<double>& p, double u) {
  double total = 0.0;
  for (const double x : p) total += x;
  check(total > 0.0, "sampling from a distribution with no mass");
  const double target = u * total;
  double cumulative = 0.0;
  int32_t last = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] <= 0.0) continue;
    cumulative += p[i];
    last = static_cast<int32_t>(i);
    if (target < cumulative) return last;
  }
  return last;
}

int32_t draw_residual(const std::vector<double>& p, const std::vector<double>& q, double u) {
  std::vector<double> residual(p.size());
  double total = 0.0;
  for (size_t i = 0; i < p.size(); ++i) total += residual[i] = std::max(0.0, p[i] - q[i]);
  // p == q leaves nothing: a rejection there is rounding, and p is exact.
  return total > 0.0 ? draw_from(residual, u) : draw_from(p, u);
}

Verified verify_draft(std::span<const std::vector<double>> target,
                      std::span<const std::vector<double>> draft,
                      std::span<const int32_t> draft_tokens, std::mt19937_64& rng) {
  const size_t gamma = draft_tokens.size();
  check(draft.size() == gamma && target.size() == gamma + 1, "verify_draft: ", gamma,
        " draft tokens need ", gamma, " draft and ", gamma + 1, " target distributions (got ",
        draft.size(), " and ", target.size(), ")");
  Verified out;
  for (size_t i = 0; i < gamma; ++i) {
    const auto x = static_cast<size_t>(draft_tokens[i]);
    check(x < target[i].size() && x < draft[i].size(), "verify_draft: draft token ", x,
          " is outside the vocabulary");
    if (!accept_draft(target[i][x], draft[i][x], uniform(rng))) {
      out.tokens.push_back(draw_residual(target[i], draft[i], uniform(rng)));
      return out;
    }
    out.tokens.push_back(draft_tokens[i]);
    ++out.num_accepted;
  }
  out.tokens.push_back(draw_from(target[gamma], uniform(rng)));
  return out;
}

}  // namespace hive
