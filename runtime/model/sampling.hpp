#pragma once
// Choosing the next token from logits, in vLLM's order:
//
//   penalties   repetition, frequency, presence on the raw logits, from the
//               sequence's token counts (penalties.hpp); greedy too
//   greedy      temperature 0: the argmax of the penalised logits
//   temperature p = softmax(l / T)
//   min-p       keep p >= min_p * max(p)
//   top-k       keep the k largest (and every tie with the k-th)
//   top-p       keep the shortest prefix whose renormalised mass reaches top_p
//   draw        from a seeded generator, so a fixed seed gives a fixed output
//
// min-p comes before top-p as in vLLM (not after it, as in Hugging Face):
// top-p's mass is then counted over what min-p kept.
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "runtime/core/sampling_params.hpp"
#include "runtime/model/penalties.hpp"
#include "runtime/model/rejection_sampler.hpp"

namespace hive {

// The index of the largest logit; ties go to the lower index. NaN logits are
// never chosen; logits that are all NaN or -inf are an error.
int32_t argmax(std::span<const float> logits);

// The tokens a draw chooses among after temperature, min-p, top-k and
// top-p, in descending logit order, with unnormalised weights (the largest
// is 1) summing to `mass`.
struct Candidates {
  std::vector<int32_t> ids;
  std::vector<double> weights;
  double mass = 0.0;
};
// For temperature > 0; the same rules and errors as Sampler::sample().
Candidates shape_candidates(std::span<const float> logits, const SamplingParams& params);

// The distribution a sample() draws from, over the whole vocabulary
// (penalties aside: apply them to the logits first). Greedy: all of it on
// the argmax. Speculative decoding shapes the target's and the draft's
// distributions with it, the same way.
std::vector<double> sampling_probs(std::span<const float> logits, const SamplingParams& params);

class Sampler {
 public:
  // Each sample() with temperature > 0 draws once from the generator, so a
  // sampler made for a sequence that already sampled `num_sampled` tokens
  // (by a worker that was replaced) skips as many draws and continues the
  // same stream.
  explicit Sampler(const SamplingParams& params, int64_t num_sampled = 0);
  // top_k keeps every token tied with the k-th largest logit. Tokens with a
  // +inf logit share all the probability; NaN logits get none; logits that
  // are all NaN or -inf are an error.
  // With penalties on, the sampled token joins the sequence's history.
  int32_t sample(std::span<const float> logits);
  // Speculative verification (rejection_sampler.hpp) of `drafts` against
  // the target's logits at the draft's positions and one after (rows of
  // `vocab`, drafts.size() + 1 of them), from this sampler's stream and
  // with its penalties, each position seeing the tokens accepted before it.
  // draft_probs: the drafter's distribution per draft token, or empty for
  // all of it on the token. Greedy keeps a draft exactly when it is the
  // argmax sample() would return. Returns the accepted drafts and one more.
  Verified verify(std::span<const float> logits, size_t vocab, std::span<const int32_t> drafts,
                  std::span<const std::vector<float>> draft_probs);
  // Replaces the history the penalties read: the prompt and every token the
  // sequence generated before the next sample().
  void set_history(std::span<const int32_t> prompt, std::span<const int32_t> output) {
    counts_.assign(prompt, output);
  }
  const TokenCounts& counts() const { return counts_; }
  const SamplingParams& params() const { return params_; }

 private:
  int32_t draw(std::span<const float> logits);
  // The logits with this sampler's penalties applied (a copy when there are any).
  std::span<const float> penalize(std::span<const float> logits);

  SamplingParams params_;
  std::mt19937_64 rng_;
  TokenCounts counts_;
  std::vector<float> penalized_;  // sample()'s copy of the logits
};

}  // namespace hive
