// Penalties and min-p against hand-computed references: exact logits for
// each penalty on small rows, vLLM's order (penalties on raw logits, then
// temperature, then min-p, then top-k/top-p), greedy with penalties, and
// seeded reproducibility with a history.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "base/error.hpp"
#include "runtime/model/penalties.hpp"
#include "runtime/model/sampling.hpp"

namespace hive {
namespace {

SamplingParams penalties(float presence, float frequency, float repetition) {
  SamplingParams p;
  p.presence_penalty = presence;
  p.frequency_penalty = frequency;
  p.repetition_penalty = repetition;
  return p;
}

std::vector<float> penalized(const SamplingParams& params, std::vector<int32_t> prompt,
                             std::vector<int32_t> output) {
  std::vector<float> logits = {2.0f, -1.0f, 0.5f, 3.0f, -2.0f, 0.0f};
  TokenCounts counts;
  counts.assign(prompt, output);
  apply_penalties(logits, params, counts);
  return logits;
}

// Prompt {0, 1, 1}, output {1, 3, 3, 5}: token 0 is in the prompt only, 1
// in both (once generated), 3 generated twice, 5 once (logit 0), 2 and 4
// nowhere. Every value below is exact in float.
TEST(Penalties, EachPenaltyAloneOnAHandComputedRow) {
  const std::vector<int32_t> prompt = {0, 1, 1}, output = {1, 3, 3, 5};
  // Presence: -0.5 for every generated token, whatever its count; the
  // prompt does not count.
  EXPECT_EQ(penalized(penalties(0.5f, 0, 1), prompt, output),
            (std::vector<float>{2.0f, -1.5f, 0.5f, 2.5f, -2.0f, -0.5f}));
  // Frequency: -0.25 x count.
  EXPECT_EQ(penalized(penalties(0, 0.25f, 1), prompt, output),
            (std::vector<float>{2.0f, -1.25f, 0.5f, 2.5f, -2.0f, -0.25f}));
  // Repetition: prompt and output, once per token however often it occurs:
  // positive / 2, negative (and zero) x 2.
  EXPECT_EQ(penalized(penalties(0, 0, 2), prompt, output),
            (std::vector<float>{1.0f, -2.0f, 0.5f, 1.5f, -2.0f, 0.0f}));
  // A negative presence or frequency penalty encourages repeats.
  EXPECT_EQ(penalized(penalties(-1.0f, -0.5f, 1), prompt, output),
            (std::vector<float>{2.0f, 0.5f, 0.5f, 5.0f, -2.0f, 1.5f}));
  // Off: nothing changes, with or without history.
  EXPECT_EQ(penalized(SamplingParams{}, prompt, output),
            (std::vector<float>{2.0f, -1.0f, 0.5f, 3.0f, -2.0f, 0.0f}));
}

// vLLM's apply_penalties order: repetition first, then frequency, then
// presence. For token 3: 3 / 2 = 1.5, - 0.25 x 2 = 1.0, - 0.5 = 0.5 (had the
// subtractions come first, (3 - 1) / 2 = 1.0).
TEST(Penalties, AllTogetherInVllmsOrder) {
  EXPECT_EQ(penalized(penalties(0.5f, 0.25f, 2), {0, 1, 1}, {1, 3, 3, 5}),
            (std::vector<float>{1.0f, -2.75f, 0.5f, 0.5f, -2.0f, -0.75f}));
}

TEST(Penalties, ATokenOutsideTheLogitsIsAnError) {
  TokenCounts counts;
  counts.assign({}, std::vector<int32_t>{6});
  std::vector<float> logits(6, 0.0f);
  EXPECT_THROW(apply_penalties(logits, penalties(0.5f, 0, 1), counts), Error);
}

// Greedy applies the penalties before its argmax, and each pick joins the
// history: with frequency 0.5 on {1.0, 0.9, 0.1} after one token 0,
//   step 1: {0.5, 0.9, 0.1} -> 1     step 2: {0.5, 0.4, 0.1} -> 0
//   step 3: {0.0, 0.4, 0.1} -> 1     step 4: {0.0, -0.1, 0.1} -> 2
TEST(Penalties, GreedyPenalisesBeforeItsArgmaxAndCountsItsPicks) {
  const std::vector<float> logits = {1.0f, 0.9f, 0.1f};
  Sampler greedy(penalties(0, 0.5f, 1));
  greedy.set_history(std::vector<int32_t>{}, std::vector<int32_t>{0});
  std::vector<int32_t> picks;
  for (int i = 0; i < 4; ++i) picks.push_back(greedy.sample(logits));
  EXPECT_EQ(picks, (std::vector<int32_t>{1, 0, 1, 2}));
  // Repetition reads the prompt: 2.0 / 2 = 1.0 < 1.5.
  Sampler repeat(penalties(0, 0, 2));
  repeat.set_history(std::vector<int32_t>{0}, std::vector<int32_t>{});
  EXPECT_EQ(repeat.sample(std::vector<float>{2.0f, 1.5f}), 1);
  // Presence does not: the same prompt leaves token 0 on top.
  Sampler presence(penalties(2, 0, 1));
  presence.set_history(std::vector<int32_t>{0}, std::vector<int32_t>{});
  EXPECT_EQ(presence.sample(std::vector<float>{2.0f, 1.5f}), 0);
}

std::map<int, double> frequencies(Sampler& sampler, const std::vector<float>& logits, int draws,
                                  const std::vector<int32_t>& output = {}) {
  std::map<int, double> freq;
  for (int i = 0; i < draws; ++i) {
    sampler.set_history(std::vector<int32_t>{}, output);  // the same history every draw
    freq[sampler.sample(logits)] += 1.0 / draws;
  }
  return freq;
}

// Penalties act on the raw logits, before temperature: presence 1 on
// {1, 0} after a token 0 makes {0, 0}, an even draw at any temperature. Had
// it come after T = 0.5, {2, 0} - 1 = {1, 0} would give token 0 73 %.
TEST(Penalties, PenaltiesComeBeforeTemperature) {
  SamplingParams params = penalties(1.0f, 0, 1);
  params.temperature = 0.5f;
  params.seed = 11;
  Sampler sampler(params);
  std::map<int, double> freq = frequencies(sampler, {1.0f, 0.0f}, 20000, {0});
  EXPECT_NEAR(freq[0], 0.5, 0.015);
  EXPECT_NEAR(freq[1], 0.5, 0.015);
}

SamplingParams min_p_params(float temperature, float min_p, float top_p, uint64_t seed) {
  SamplingParams p;
  p.temperature = temperature;
  p.min_p = min_p;
  p.top_p = top_p;
  p.seed = seed;
  return p;
}

// min_p 0.3 on {2, 1, 0, -1} at T = 1 keeps p_i / p_max = e^(l_i - 2) >= 0.3:
// tokens 0 (1) and 1 (e^-1 = 0.37), not 2 (0.14) or 3; they are drawn as
// 1 : e^-1, i.e. 0.731 and 0.269.
TEST(MinP, KeepsTokensAtLeastMinPTimesTheTopProbability) {
  Sampler sampler(min_p_params(1.0f, 0.3f, 1.0f, 21));
  std::map<int, double> freq = frequencies(sampler, {2.0f, 1.0f, 0.0f, -1.0f}, 20000);
  const double p0 = 1.0 / (1.0 + std::exp(-1.0));
  EXPECT_NEAR(freq[0], p0, 0.015);
  EXPECT_NEAR(freq[1], 1.0 - p0, 0.015);
  EXPECT_EQ(freq[2], 0.0);
  EXPECT_EQ(freq[3], 0.0);
  // min_p 1 keeps the top and its ties only.
  Sampler top_only(min_p_params(1.0f, 1.0f, 1.0f, 22));
  std::map<int, double> ties = frequencies(top_only, {1.0f, 1.0f, 0.99f}, 4000);
  EXPECT_NEAR(ties[0], 0.5, 0.04);
  EXPECT_EQ(ties[2], 0.0);
}

// min-p reads the probabilities after temperature: for {0, -1} the ratio is
// e^(-1/T): 0.135 at T = 0.5 (below min_p 0.3: token 1 never drawn), 0.37 at
// T = 1 (kept).
TEST(MinP, ComesAfterTemperature) {
  Sampler cold(min_p_params(0.5f, 0.3f, 1.0f, 31));
  EXPECT_EQ(frequencies(cold, {0.0f, -1.0f}, 2000)[1], 0.0);
  Sampler warm(min_p_params(1.0f, 0.3f, 1.0f, 31));
  EXPECT_NEAR(frequencies(warm, {0.0f, -1.0f}, 20000)[1], std::exp(-1.0) / (1 + std::exp(-1.0)),
              0.015);
}

// vLLM applies min-p before top-p, which then counts mass over what min-p
// kept. p = {0.5, 0.3, 0.2}, min_p 0.5 keeps {0.5, 0.3} = {0.625, 0.375}
// renormalised; top_p 0.6 then keeps token 0 alone. (Top-p first, as in
// Hugging Face, would keep 0.5 + 0.3 and draw token 1 37.5 % of the time.)
TEST(MinP, ComesBeforeTopP) {
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  Sampler both(min_p_params(1.0f, 0.5f, 0.6f, 41));
  const std::map<int, double> kept = frequencies(both, logits, 2000);
  EXPECT_EQ(kept.count(1) + kept.count(2), 0u);  // token 0 only
  Sampler top_p_alone(min_p_params(1.0f, 0.0f, 0.6f, 41));
  EXPECT_NEAR(frequencies(top_p_alone, logits, 20000)[1], 0.375, 0.015);
}

// A seed and a history fix the draws; a sampler resumed after k tokens
// (a replaced worker) with the history up to there continues the stream.
TEST(Penalties, SeededDrawsWithPenaltiesAreReproducibleAndResumable) {
  SamplingParams params = penalties(0.3f, 0.2f, 1.3f);
  params.temperature = 0.9f;
  params.min_p = 0.05f;
  params.seed = 5;
  const std::vector<float> logits = {0.5f, 1.0f, 0.2f, 0.8f, -0.3f, 0.6f, 0.0f, 0.9f};
  const std::vector<int32_t> prompt = {1, 3, 3, 7};
  const auto run = [&](Sampler& s, int n) {
    std::vector<int32_t> out;
    for (int i = 0; i < n; ++i) out.push_back(s.sample(logits));
    return out;
  };
  Sampler a(params), b(params);
  a.set_history(prompt, std::vector<int32_t>{});
  b.set_history(prompt, std::vector<int32_t>{});
  const std::vector<int32_t> draws = run(a, 40);
  EXPECT_EQ(run(b, 40), draws);
  Sampler resumed(params, 25);
  resumed.set_history(prompt, std::span(draws).first(25));
  EXPECT_EQ(run(resumed, 15), std::vector<int32_t>(draws.begin() + 25, draws.end()));
  // The penalties change the stream: without them the same seed draws otherwise.
  SamplingParams plain = params;
  plain.presence_penalty = plain.frequency_penalty = 0.0f;
  plain.repetition_penalty = 1.0f;
  Sampler c(plain);
  EXPECT_NE(run(c, 40), draws);
}

TEST(Penalties, RejectsOutOfRangeParameters) {
  const auto bad = [](auto edit, const char* message) {
    SamplingParams p;
    edit(p);
    try {
      validate(p);
      ADD_FAILURE() << "accepted: " << message;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  bad([](SamplingParams& p) { p.min_p = 1.5f; }, "min_p must be in [0, 1] (got 1.5)");
  bad([](SamplingParams& p) { p.min_p = -0.1f; }, "min_p must be in [0, 1]");
  bad([](SamplingParams& p) { p.presence_penalty = 2.5f; },
      "presence_penalty must be in [-2, 2] (got 2.5)");
  bad([](SamplingParams& p) { p.frequency_penalty = -3.0f; },
      "frequency_penalty must be in [-2, 2] (got -3)");
  bad([](SamplingParams& p) { p.repetition_penalty = 0.0f; },
      "repetition_penalty must be > 0 (got 0)");
  bad([](SamplingParams& p) { p.repetition_penalty = NAN; }, "repetition_penalty must be > 0");
  bad([](SamplingParams& p) { p.logprobs = 21; }, "logprobs must be in [0, 20] (got 21)");
  bad([](SamplingParams& p) { p.logprobs = -1; }, "logprobs must be in [0, 20] (got -1)");
  SamplingParams edges;
  edges.min_p = 1.0f;
  edges.presence_penalty = -2.0f;
  edges.frequency_penalty = 2.0f;
  edges.repetition_penalty = 5.0f;  // vLLM sets no upper bound
  edges.logprobs = 20;
  EXPECT_NO_THROW(validate(edges));
}

}  // namespace
}  // namespace hive
