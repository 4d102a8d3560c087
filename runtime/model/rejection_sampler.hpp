#pragma once
// Speculative verification by rejection sampling (Leviathan et al. 2023;
// Chen et al. 2023). A draft proposed γ tokens x_1..x_γ, each drawn from its
// distribution q_i; the target computed p_1..p_{γ+1} at the same positions
// in one step. Walking the drafts in order:
//
//   accept x_i with probability min(1, p_i(x_i) / q_i(x_i))
//   on the first rejection, emit a token from norm(max(0, p_i - q_i)), stop
//   when all γ are accepted, emit a bonus token from p_{γ+1}
//
// Every emitted token is then distributed exactly as if the target had
// sampled it, whatever the draft proposed. p and q are the distributions
// the sampler would draw from (sampling_probs: temperature, min-p, top-k,
// top-p applied to both alike). Greedy is the special case of one-hot p and
// q: a draft token is kept exactly when it is the target's argmax. A
// drafter that proposes without a distribution (n-gram lookup) passes a
// one-hot q on its token.
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace hive {

struct Verified {
  std::vector<int32_t> tokens;  // the accepted drafts, then one more token
  int num_accepted = 0;         // drafts kept: tokens.size() - 1
};

// target: γ+1 distributions, draft: γ, draft_tokens: γ; each distribution
// over the whole vocabulary. Draws from `rng` (at most γ + 1 uniforms).
Verified verify_draft(std::span<const std::vector<double>> target,
                      std::span<const std::vector<double>> draft,
                      std::span<const int32_t> draft_tokens, std::mt19937_64& rng);

// The pieces, for tests that compose a deliberately wrong rule from them:
// whether a draft token with target probability p and draft probability q
// is accepted given a uniform u in [0, 1); and a draw from
// norm(max(0, p - q)) (from p when the two are equal, where no rejection
// can happen but rounding).
bool accept_draft(double p, double q, double u);
int32_t draw_residual(const std::vector<double>& p, const std::vector<double>& q, double u);
// A draw from p with a uniform u in [0, 1).
int32_t draw_from(const std::vector<double>& p, double u);
// A uniform in [0, 1) from the top 53 bits, the same on every platform.
double uniform(std::mt19937_64& rng);

}  // namespace hive
