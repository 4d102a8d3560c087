// Rejection sampling keeps the target's distribution exactly. A small
// vocabulary "model" (a Markov chain: the next token's logits depend on the
// last token) and a draft that is a noisy copy of it generate 3-token
// continuations speculatively, γ = 3 drafts per step; the joint frequency
// of the first two tokens and the frequency of the third are compared with
// the target chain's exact probabilities by a χ² test at significance
// 0.001, for plain sampling, top-k, top-p and min-p. A verifier with the
// classic mistake (resampling from p instead of max(0, p - q) after a
// rejection) fails the same test. Seeds are fixed and printed.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "base/error.hpp"
#include "runtime/model/rejection_sampler.hpp"
#include "runtime/model/sampling.hpp"

namespace hive {
namespace {

constexpr int kVocab = 6;
constexpr int kGamma = 3;
constexpr int kSamples = 20000;

using Dist = std::vector<double>;
using Verifier = std::function<Verified(std::span<const Dist>, std::span<const Dist>,
                                        std::span<const int32_t>, std::mt19937_64&)>;

// p(· | last token) for every last token, shaped by `params`.
struct Chain {
  std::vector<Dist> next;
};

Chain make_chain(const std::vector<std::vector<float>>& logits, const SamplingParams& params) {
  Chain c;
  for (const auto& row : logits) c.next.push_back(sampling_probs(row, params));
  return c;
}

std::vector<std::vector<float>> random_logits(std::mt19937_64& rng, float scale,
                                              const std::vector<std::vector<float>>* base) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<std::vector<float>> logits(kVocab, std::vector<float>(kVocab));
  for (int a = 0; a < kVocab; ++a)
    for (int b = 0; b < kVocab; ++b)
      logits[a][b] = (base ? (*base)[a][b] : 0.0f) + normal(rng);
  return logits;
}

// Three tokens after token 0, generated speculatively.
std::vector<int32_t> speculate(const Chain& target, const Chain& draft, const Verifier& verify,
                               std::mt19937_64& rng) {
  std::vector<int32_t> out;
  int32_t last = 0;
  while (out.size() < 3) {
    std::vector<int32_t> proposal;
    std::vector<Dist> q, p{target.next[static_cast<size_t>(last)]};
    int32_t prev = last;
    for (int i = 0; i < kGamma; ++i) {
      q.push_back(draft.next[static_cast<size_t>(prev)]);
      prev = draw_from(q.back(), uniform(rng));
      proposal.push_back(prev);
      p.push_back(target.next[static_cast<size_t>(prev)]);
    }
    const Verified v = verify(p, q, proposal, rng);
    EXPECT_EQ(v.tokens.size(), static_cast<size_t>(v.num_accepted) + 1);
    for (const int32_t t : v.tokens) out.push_back(t);
    last = out.back();
  }
  out.resize(3);
  return out;
}

// χ² critical value at significance 0.001 (Wilson-Hilferty).
double critical_value(int df) {
  const double z = 3.0902;
  const double k = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - k + z * std::sqrt(k), 3.0);
}

struct Fit {
  double chi2 = 0.0;
  int df = -1;
  bool impossible_seen = false;  // a token of probability 0 came out
  bool passes() const { return !impossible_seen && chi2 < critical_value(df); }
};

void add(Fit& fit, double observed, double expected) {
  if (expected <= 0.0) {
    fit.impossible_seen |= observed > 0.0;
    return;
  }
  fit.chi2 += (observed - expected) * (observed - expected) / expected;
  ++fit.df;
}

// The joint of tokens 1-2 and the marginal of token 3 against the chain.
std::pair<Fit, Fit> fit(const Chain& target, const Chain& draft, const Verifier& verify,
                        uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> joint(kVocab * kVocab, 0.0), third(kVocab, 0.0);
  for (int n = 0; n < kSamples; ++n) {
    const std::vector<int32_t> t = speculate(target, draft, verify, rng);
    ++joint[static_cast<size_t>(t[0] * kVocab + t[1])];
    ++third[static_cast<size_t>(t[2])];
  }
  Fit pair, last;
  std::vector<double> exact_third(kVocab, 0.0);
  for (int a = 0; a < kVocab; ++a)
    for (int b = 0; b < kVocab; ++b) {
      const double pab = target.next[0][a] * target.next[static_cast<size_t>(a)][b];
      add(pair, joint[static_cast<size_t>(a * kVocab + b)], pab * kSamples);
      for (int c = 0; c < kVocab; ++c) exact_third[c] += pab * target.next[static_cast<size_t>(b)][c];
    }
  for (int c = 0; c < kVocab; ++c) add(last, third[static_cast<size_t>(c)], exact_third[c] * kSamples);
  return {pair, last};
}

// The classic mistake: after a rejection, sample from p, not max(0, p - q).
Verified resample_from_target(std::span<const Dist> p, std::span<const Dist> q,
                              std::span<const int32_t> drafts, std::mt19937_64& rng) {
  Verified out;
  for (size_t i = 0; i < drafts.size(); ++i) {
    const auto x = static_cast<size_t>(drafts[i]);
    if (!accept_draft(p[i][x], q[i][x], uniform(rng))) {
      out.tokens.push_back(draw_from(p[i], uniform(rng)));
      return out;
    }
    out.tokens.push_back(drafts[i]);
    ++out.num_accepted;
  }
  out.tokens.push_back(draw_from(p[drafts.size()], uniform(rng)));
  return out;
}

struct Case {
  const char* name;
  SamplingParams params;
};

std::vector<Case> cases() {
  SamplingParams plain;
  plain.temperature = 1.0f;
  SamplingParams top_k = plain;
  top_k.temperature = 0.8f;
  top_k.top_k = 3;
  SamplingParams top_p = plain;
  top_p.temperature = 1.2f;
  top_p.top_p = 0.7f;
  SamplingParams min_p = plain;
  min_p.min_p = 0.15f;
  return {{"plain", plain}, {"top_k", top_k}, {"top_p", top_p}, {"min_p", min_p}};
}

TEST(RejectionSampler, KeepsTheTargetDistributionExactly) {
  for (const Case& c : cases()) {
    const uint64_t seed = 1234;
    std::mt19937_64 rng(seed);
    const auto target_logits = random_logits(rng, 1.5f, nullptr);
    const auto draft_logits = random_logits(rng, 1.0f, &target_logits);
    const Chain target = make_chain(target_logits, c.params);
    const Chain draft = make_chain(draft_logits, c.params);
    const auto [pair, last] = fit(target, draft, verify_draft, seed + 1);
    SCOPED_TRACE(testing::Message() << c.name << ", seed " << seed);
    std::cout << c.name << " (seed " << seed << "): chi2 " << pair.chi2 << " on " << pair.df
              << " df (critical " << critical_value(pair.df) << "), third token " << last.chi2
              << " on " << last.df << " df\n";
    EXPECT_TRUE(pair.passes()) << "tokens 1-2: chi2 " << pair.chi2 << " on " << pair.df << " df";
    EXPECT_TRUE(last.passes()) << "token 3: chi2 " << last.chi2 << " on " << last.df << " df";
  }
}

TEST(RejectionSampler, TheTestCatchesAVerifierThatResamplesFromTheTarget) {
  const uint64_t seed = 1234;
  std::mt19937_64 rng(seed);
  const auto target_logits = random_logits(rng, 1.5f, nullptr);
  const auto draft_logits = random_logits(rng, 1.0f, &target_logits);
  const SamplingParams params = cases()[0].params;
  const Chain target = make_chain(target_logits, params);
  const Chain draft = make_chain(draft_logits, params);
  const auto [pair, last] = fit(target, draft, resample_from_target, seed + 1);
  std::cout << "broken rule: chi2 " << pair.chi2 << " on " << pair.df << " df\n";
  EXPECT_FALSE(pair.passes() && last.passes());
}

TEST(RejectionSampler, AcceptsAtTheRateOfTheOverlap) {
  // P(accept) = sum_x min(p(x), q(x)) for one position.
  std::mt19937_64 rng(7);
  const Dist p = {0.5, 0.3, 0.2, 0.0}, q = {0.2, 0.2, 0.2, 0.4};
  int accepted = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const int32_t x = draw_from(q, uniform(rng));
    const std::vector<Dist> target{p, p}, draft{q};
    accepted += verify_draft(target, draft, std::vector<int32_t>{x}, rng).num_accepted;
  }
  EXPECT_NEAR(static_cast<double>(accepted) / n, 0.2 + 0.2 + 0.2 + 0.0, 0.01);
}

TEST(RejectionSampler, GreedyKeepsExactlyTheArgmaxPrefix) {
  SamplingParams greedy;  // temperature 0
  const std::vector<float> a = {0.1f, 2.0f, 0.3f}, b = {3.0f, 1.0f, 0.0f}, c = {0.0f, 0.0f, 5.0f};
  const std::vector<Dist> target = {sampling_probs(a, greedy), sampling_probs(b, greedy),
                                    sampling_probs(c, greedy)};
  std::mt19937_64 rng(1);
  // Both drafts agree with the argmax: kept, and the bonus is c's argmax.
  std::vector<Dist> draft = {sampling_probs(a, greedy), sampling_probs(b, greedy)};
  Verified v = verify_draft(target, draft, std::vector<int32_t>{1, 0}, rng);
  EXPECT_EQ(v.tokens, (std::vector<int32_t>{1, 0, 2}));
  EXPECT_EQ(v.num_accepted, 2);
  // The second disagrees: replaced by the target's argmax, nothing after it.
  draft[1] = sampling_probs(c, greedy);
  v = verify_draft(target, draft, std::vector<int32_t>{1, 2}, rng);
  EXPECT_EQ(v.tokens, (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(v.num_accepted, 1);
}

// Sampler::verify, what the model runner calls, through the same χ² test:
// the target's shaped p given as logits (softmax(log p) = p), the draft's q
// as floats, or none for a deterministic drafter (n-gram lookup: all of q
// on its token).
Verifier sampler_verifier(Sampler& sampler, bool deterministic_draft) {
  return [&sampler, deterministic_draft](std::span<const Dist> p, std::span<const Dist> q,
                                         std::span<const int32_t> drafts, std::mt19937_64&) {
    std::vector<float> logits;
    for (const Dist& dist : p)
      for (const double x : dist)
        logits.push_back(x > 0.0 ? static_cast<float>(std::log(x))
                                 : -std::numeric_limits<float>::infinity());
    std::vector<std::vector<float>> draft_probs;
    if (!deterministic_draft)
      for (const Dist& dist : q) draft_probs.emplace_back(dist.begin(), dist.end());
    return sampler.verify(logits, kVocab, drafts, draft_probs);
  };
}

TEST(RejectionSampler, TheSamplersVerifyKeepsTheTargetDistribution) {
  for (const bool deterministic : {false, true}) {
    for (const Case& c : cases()) {
      const uint64_t seed = 99;
      std::mt19937_64 rng(seed);
      const auto target_logits = random_logits(rng, 1.5f, nullptr);
      const Chain target = make_chain(target_logits, c.params);
      Chain draft = make_chain(random_logits(rng, 1.0f, &target_logits), c.params);
      if (deterministic)  // always the same guess after a token: one-hot rows
        for (size_t a = 0; a < draft.next.size(); ++a) {
          draft.next[a].assign(kVocab, 0.0);
          draft.next[a][(2 * a + 1) % kVocab] = 1.0;
        }
      SamplingParams plain;
      plain.temperature = 1.0f;
      plain.seed = seed;
      Sampler sampler(plain);
      const auto [pair, last] = fit(target, draft, sampler_verifier(sampler, deterministic), seed);
      SCOPED_TRACE(testing::Message() << c.name << (deterministic ? ", one-hot draft" : "")
                                      << ", seed " << seed);
      EXPECT_TRUE(pair.passes()) << "tokens 1-2: chi2 " << pair.chi2 << " on " << pair.df << " df";
      EXPECT_TRUE(last.passes()) << "token 3: chi2 " << last.chi2 << " on " << last.df << " df";
    }
  }
}

// Greedy verification returns exactly what sample() returns token by token,
// penalties included: each position sees the drafts accepted before it.
TEST(RejectionSampler, GreedyVerifyIsSampleTokenByToken) {
  std::mt19937_64 rng(5);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  SamplingParams params;  // greedy
  params.repetition_penalty = 1.8f;
  params.frequency_penalty = 0.7f;
  const std::vector<int32_t> prompt = {1, 2, 3};
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> rows(4 * kVocab);
    for (float& x : rows) x = normal(rng);
    Sampler reference(params);
    reference.set_history(prompt, {});
    std::vector<int32_t> expected;
    for (int i = 0; i < 4; ++i)
      expected.push_back(reference.sample(std::span<const float>(rows).subspan(i * kVocab, kVocab)));
    // Drafts: the expected tokens, wrong from position `wrong` on.
    const int wrong = trial % 4;
    std::vector<int32_t> drafts(expected.begin(), expected.begin() + 3);
    if (wrong < 3) drafts[static_cast<size_t>(wrong)] = (drafts[static_cast<size_t>(wrong)] + 1) % kVocab;
    Sampler verifier(params);
    verifier.set_history(prompt, {});
    const Verified v = verifier.verify(rows, kVocab, drafts, {});
    const int accepted = std::min(wrong, 3);
    ASSERT_EQ(v.num_accepted, accepted) << "trial " << trial;
    EXPECT_EQ(v.tokens, std::vector<int32_t>(expected.begin(), expected.begin() + accepted + 1))
        << "trial " << trial;
    // Its penalties counted what it returned, as sample() would have.
    reference.set_history(prompt, v.tokens);
    EXPECT_EQ(verifier.counts().output(), reference.counts().output()) << "trial " << trial;
  }
}

TEST(RejectionSampler, RefusesMismatchedShapes) {
  std::mt19937_64 rng(1);
  const std::vector<Dist> two(2, Dist{1.0}), one(1, Dist{1.0});
  EXPECT_THROW(verify_draft(one, one, std::vector<int32_t>{0}, rng), Error);
  EXPECT_THROW(verify_draft(two, one, std::vector<int32_t>{5}, rng), Error);
}

}  // namespace
}  // namespace hive
