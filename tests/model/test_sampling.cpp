// Sampling: greedy ties, top-k/top-p cuts, seeded determinism, and that draws
// follow softmax(logits / T) over the kept candidates.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "base/error.hpp"
#include "runtime/model/sampling.hpp"

namespace hive {
namespace {

TEST(Sampling, GreedyTakesTheLowestIdAmongTies) {
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(argmax(logits), 1);
  Sampler greedy({});
  EXPECT_EQ(greedy.sample(logits), 1);
}

TEST(Sampling, TopKOneAndTinyTopPAreGreedy) {
  const std::vector<float> logits = {0.1f, 0.3f, 0.2f, 0.25f};
  Sampler top_k({2.0f, 1, 1.0f, 123});
  Sampler top_p({2.0f, 0, 1e-6f, 456});
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(top_k.sample(logits), 1);
    EXPECT_EQ(top_p.sample(logits), 1);
  }
}

// A sampler made for a sequence that already sampled k tokens (its worker
// was replaced) continues the stream a sampler that never stopped would draw.
TEST(Sampling, ASamplerResumedAfterKTokensContinuesTheSameDraws) {
  const std::vector<float> logits = {0.0f, 0.1f, 0.2f, 0.3f, 0.4f};
  const SamplingParams params{1.0f, 0, 0.9f, 7};
  Sampler whole(params);
  std::vector<int32_t> draws;
  for (int i = 0; i < 40; ++i) draws.push_back(whole.sample(logits));
  Sampler resumed(params, 25);
  for (size_t i = 25; i < draws.size(); ++i) EXPECT_EQ(resumed.sample(logits), draws[i]) << i;
  Sampler greedy({}, 25);  // greedy draws nothing to skip
  EXPECT_EQ(greedy.sample(logits), 4);
}

TEST(Sampling, SameSeedSameDraws) {
  const std::vector<float> logits = {0.0f, 0.1f, 0.2f, 0.3f, 0.4f};
  Sampler a({1.0f, 0, 1.0f, 99}), b({1.0f, 0, 1.0f, 99}), c({1.0f, 0, 1.0f, 100});
  std::vector<int32_t> da, db, dc;
  for (int i = 0; i < 64; ++i)
    da.push_back(a.sample(logits)), db.push_back(b.sample(logits)), dc.push_back(c.sample(logits));
  EXPECT_EQ(da, db);
  EXPECT_NE(da, dc);
}

TEST(Sampling, FrequenciesFollowTheTemperedSoftmaxOverTheNucleus) {
  const std::vector<float> logits = {1.0f, 0.0f, 2.0f, -3.0f, 0.5f};
  const float temperature = 0.7f, top_p = 0.9f;
  // Expected: softmax(l / T), sorted descending, cut to the shortest prefix reaching top_p.
  std::vector<std::pair<double, int>> p;
  double total = 0;
  for (int i = 0; i < 5; ++i) total += std::exp(logits[i] / temperature);
  for (int i = 0; i < 5; ++i) p.push_back({std::exp(logits[i] / temperature) / total, i});
  std::sort(p.rbegin(), p.rend());
  double cumulative = 0, mass = 0;
  size_t keep = 0;
  while (cumulative < top_p) cumulative += p[keep++].first;
  for (size_t i = 0; i < keep; ++i) mass += p[i].first;
  Sampler sampler({temperature, 0, top_p, 2024});
  std::map<int, int> counts;
  const int draws = 20000;
  for (int i = 0; i < draws; ++i) ++counts[sampler.sample(logits)];
  for (size_t i = 0; i < p.size(); ++i) {
    const double expected = i < keep ? p[i].first / mass : 0.0;
    EXPECT_NEAR(counts[p[i].second] / double{draws}, expected, 0.015) << "token " << p[i].second;
  }
}

// HF's and vLLM's top-k mask only logits below the k-th: a token tied with
// the k-th stays a candidate.
TEST(Sampling, TopKKeepsEveryTokenTiedWithTheKth) {
  const std::vector<float> logits = {1.0f, 1.0f, 1.0f, 0.0f};
  Sampler sampler({1.0f, 2, 1.0f, 5});
  std::map<int, int> counts;
  const int draws = 6000;
  for (int i = 0; i < draws; ++i) ++counts[sampler.sample(logits)];
  for (int token = 0; token < 3; ++token)
    EXPECT_NEAR(counts[token] / double{draws}, 1.0 / 3, 0.03) << "token " << token;
  EXPECT_EQ(counts[3], 0);
}

// A +inf logit takes all the probability (shared with other +inf ones); NaN
// is never chosen; a row with nothing but NaN and -inf is an error, not a
// token. Before, {inf, 0, -1} sampled token 2, the least likely.
TEST(Sampling, NonFiniteLogits) {
  const float inf = INFINITY;
  for (const float temperature : {0.0f, 1.0f}) {
    SCOPED_TRACE(testing::Message() << "temperature " << temperature);
    Sampler sampler({temperature, 0, 0.9f, 3});
    for (int i = 0; i < 200; ++i) {
      EXPECT_EQ(sampler.sample(std::vector<float>{inf, 0.0f, -1.0f}), 0);
      EXPECT_EQ(sampler.sample(std::vector<float>{0.0f, inf, -5.0f, -1.0f}), 1);
      EXPECT_EQ(sampler.sample(std::vector<float>{NAN, 5.0f, -1.0f}), 1);
      EXPECT_EQ(sampler.sample(std::vector<float>{-inf, -2.0f, NAN}), 1);
    }
    EXPECT_THROW(sampler.sample(std::vector<float>{-inf, -inf, -inf}), Error);
    EXPECT_THROW(sampler.sample(std::vector<float>{NAN, NAN}), Error);
    EXPECT_THROW(sampler.sample(std::vector<float>{}), Error);
  }
  Sampler sampler({1.0f, 0, 1.0f, 4});
  std::map<int, int> counts;
  for (int i = 0; i < 2000; ++i) ++counts[sampler.sample(std::vector<float>{inf, 3.0f, inf})];
  EXPECT_EQ(counts[1], 0);
  EXPECT_NEAR(counts[0] / 2000.0, 0.5, 0.05);
}

TEST(Sampling, RejectsOutOfRangeParameters) {
  EXPECT_THROW(Sampler({-0.5f, 0, 1.0f, 0}), Error);
  EXPECT_THROW(Sampler({1.0f, -1, 1.0f, 0}), Error);
  EXPECT_THROW(Sampler({1.0f, 0, 1.5f, 0}), Error);
  EXPECT_THROW(Sampler({NAN, 0, 1.0f, 0}), Error);
}

}  // namespace
}  // namespace hive
