// Logprobs: the sampled token's logprob and the top N equal a log_softmax
// computed here independently, most likely first, ties to the lower id;
// non-finite logits keep their meaning.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/error.hpp"
#include "runtime/model/logprobs.hpp"

namespace hive {
namespace {

// log(exp(l_i) / sum exp(l_j)), the plain way, in long double.
std::vector<double> log_softmax(const std::vector<float>& logits) {
  long double total = 0;
  for (const float l : logits) total += std::exp(static_cast<long double>(l));
  std::vector<double> out;
  for (const float l : logits)
    out.push_back(static_cast<double>(std::log(std::exp(static_cast<long double>(l)) / total)));
  return out;
}

TEST(Logprobs, EqualLogSoftmaxWithTheTopNInOrder) {
  const std::vector<float> logits = {1.0f, 3.0f, -2.0f, 0.5f, 2.25f, -0.75f, 3.5f};
  const std::vector<double> want = log_softmax(logits);
  for (int32_t token = 0; token < 7; ++token) {
    const TokenLogprobs got = compute_logprobs(logits, token, 3);
    EXPECT_NEAR(got.logprob, want[static_cast<size_t>(token)], 1e-6) << token;
    EXPECT_EQ(got.top_token_ids, (std::vector<int32_t>{6, 1, 4}));
    ASSERT_EQ(got.top_logprobs.size(), 3u);
    for (size_t k = 0; k < 3; ++k)
      EXPECT_NEAR(got.top_logprobs[k], want[static_cast<size_t>(got.top_token_ids[k])], 1e-6);
  }
  // The values add up to a distribution.
  double mass = 0;
  for (int32_t token = 0; token < 7; ++token)
    mass += std::exp(double{compute_logprobs(logits, token, 0).logprob});
  EXPECT_NEAR(mass, 1.0, 1e-6);
}

TEST(Logprobs, TiesGoToTheLowerIdAndNIsCutToTheVocabulary) {
  const std::vector<float> logits = {0.0f, 2.0f, 1.0f, 2.0f, 1.0f};
  const TokenLogprobs got = compute_logprobs(logits, 4, 20);
  EXPECT_EQ(got.top_token_ids, (std::vector<int32_t>{1, 3, 2, 4, 0}));
  EXPECT_EQ(got.top_logprobs[0], got.top_logprobs[1]);
  EXPECT_EQ(got.top_logprobs[2], got.top_logprobs[3]);
  EXPECT_EQ(got.logprob, got.top_logprobs[3]);  // token 4 is the fourth
  const TokenLogprobs none = compute_logprobs(logits, 1, 0);
  EXPECT_TRUE(none.top_token_ids.empty());
  EXPECT_TRUE(none.top_logprobs.empty());
  EXPECT_NEAR(none.logprob, log_softmax(logits)[1], 1e-6);
}

// Large logits must not overflow (a plain exp would give inf / inf).
TEST(Logprobs, StableForLargeLogits) {
  const std::vector<float> logits = {1000.0f, 999.0f};
  const TokenLogprobs got = compute_logprobs(logits, 1, 1);
  EXPECT_NEAR(got.logprob, -1.0 - std::log1p(std::exp(-1.0)), 1e-6);
  EXPECT_EQ(got.top_token_ids, (std::vector<int32_t>{0}));
}

// +inf logits share the probability; -inf ones have none; NaN ranks last.
TEST(Logprobs, NonFiniteLogits) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> logits = {inf, 0.0f, inf, -inf};
  EXPECT_FLOAT_EQ(compute_logprobs(logits, 0, 0).logprob, -std::log(2.0f));
  EXPECT_EQ(compute_logprobs(logits, 1, 0).logprob, -inf);
  EXPECT_EQ(compute_logprobs(logits, 3, 4).top_token_ids, (std::vector<int32_t>{0, 2, 1, 3}));
  const std::vector<float> with_nan = {NAN, 1.0f, -inf};
  const TokenLogprobs got = compute_logprobs(with_nan, 1, 3);
  EXPECT_EQ(got.logprob, 0.0f);
  EXPECT_EQ(got.top_token_ids, (std::vector<int32_t>{1, 2, 0}));
  EXPECT_THROW(compute_logprobs(with_nan, 3, 1), Error);
}

}  // namespace
}  // namespace hive
