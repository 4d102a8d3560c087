// Routing and dispatch planning: exact expert choices, weights and the
// grouped order the expert matmuls rely on.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "moe/dispatch_plan.hpp"
#include "moe/ffn.hpp"
#include "moe/router.hpp"

namespace hive {
namespace {

TEST(DispatchPlan, GroupsAssignmentsByExpertInTokenOrder) {
  const std::vector<int32_t> ids = {2, 0, 0, 1, 2, 1};
  const std::vector<float> weights = {0.6f, 0.4f, 0.7f, 0.3f, 0.5f, 0.5f};
  const DispatchPlan plan = plan_dispatch(ids, weights, 2, 4);
  EXPECT_EQ(plan.expert_offsets, (std::vector<int64_t>{0, 2, 4, 6, 6}));
  EXPECT_EQ(plan.token_index, (std::vector<int32_t>{0, 1, 1, 2, 0, 2}));
  EXPECT_EQ(plan.weight, (std::vector<float>{0.4f, 0.7f, 0.3f, 0.5f, 0.6f, 0.5f}));
  EXPECT_EQ(plan.count(3), 0);
}

TEST(DispatchPlan, RejectsBadExpertIds) {
  const std::vector<int32_t> ids = {0, 4};
  const std::vector<float> weights = {0.5f, 0.5f};
  EXPECT_THROW(plan_dispatch(ids, weights, 2, 4), Error);
}

TEST(Router, SoftmaxTopkAndOptionalRenormalisation) {
  CpuBackend cpu;
  const std::vector<float> logits = {0.0f, 2.0f, 1.0f, -1.0f};
  for (bool normalize : {false, true}) {
    auto scratch = logits;
    std::vector<float> weights(2);
    std::vector<int32_t> ids(2);
    route_tokens(cpu, Tensor::view(scratch.data(), DType::f32, {1, 4}), {4, 2, normalize},
                 Tensor::view(weights.data(), DType::f32, {1, 2}),
                 Tensor::view(ids.data(), DType::i32, {1, 2}));
    EXPECT_EQ(ids, (std::vector<int32_t>{1, 2}));
    double total = 0;
    for (float l : logits) total += std::exp(double{l});
    const double p1 = std::exp(2.0) / total, p2 = std::exp(1.0) / total;
    EXPECT_NEAR(weights[0], normalize ? p1 / (p1 + p2) : p1, 1e-6);
    EXPECT_NEAR(weights[1], normalize ? p2 / (p1 + p2) : p2, 1e-6);
  }
}

// With one expert chosen per token and weight 1 (normalised top-1), the MoE
// output of each token is exactly its expert's FFN output.
TEST(MoeForward, TopOneEqualsTheChosenExpert) {
  CpuBackend cpu;
  const int64_t hidden = 4, inter = 3, n = 3;
  std::vector<std::vector<float>> storage;
  auto tensor = [&](std::initializer_list<int64_t> shape, float base) {
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    storage.emplace_back(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i)
      storage.back()[static_cast<size_t>(i)] =
          base + 0.01f * static_cast<float>(i % 7) - 0.02f * static_cast<float>(i % 3);
    return Tensor::view(storage.back().data(), DType::f32, shape);
  };
  storage.reserve(16);
  MoeWeights moe;
  moe.router = tensor({2, hidden}, 0.0f);
  // Router rows that send token 0 and 2 to expert 1 and token 1 to expert 0.
  std::fill(storage.back().begin(), storage.back().end(), 0.0f);
  storage.back()[0] = 5.0f;           // expert 0 likes feature 0
  storage.back()[hidden + 1] = 5.0f;  // expert 1 likes feature 1
  for (int e = 0; e < 2; ++e)
    moe.experts.push_back({tensor({inter, hidden}, 0.1f * e), tensor({inter, hidden}, 0.2f),
                           tensor({hidden, inter}, -0.1f * e + 0.05f)});
  std::vector<float> x = {0, 1, 0.5f, 0.2f, 1, 0, 0.3f, 0.1f, 0.1f, 2, 0, 0};
  const Tensor xt = Tensor::view(x.data(), DType::f32, {n, hidden});
  std::vector<float> out(static_cast<size_t>(n * hidden), NAN);
  moe_forward(cpu, xt, moe, {2, 1, true}, Tensor::view(out.data(), DType::f32, {n, hidden}));
  for (int64_t t = 0; t < n; ++t) {
    const int expert = t == 1 ? 0 : 1;
    std::vector<float> expected(static_cast<size_t>(hidden));
    ffn_forward(cpu, xt.rows(t, 1), moe.experts[static_cast<size_t>(expert)],
                Tensor::view(expected.data(), DType::f32, {1, hidden}));
    for (int64_t j = 0; j < hidden; ++j)
      EXPECT_FLOAT_EQ(out[static_cast<size_t>(t * hidden + j)], expected[static_cast<size_t>(j)]);
  }
}

// DeepSeek-V3's noaux_tc rule, worked by hand: 8 experts in 4 groups of 2,
// 2 groups kept, top 2. Biased choice scores (score + bias):
//   group 0: 0.9 0.1 (1.0)  group 1: 0.5 0.45 (0.95)  group 2: 0.2 0.7 (0.9)
//   group 3: 0.3 0.85 (1.15, expert 7 lifted by its 0.5 bias)
// Groups 3 and 0 are kept, so expert 5 (score 0.7) is out; the top two are
// experts 0 and 7, weighted by their unbiased scores 0.9 and 0.35.
TEST(Router, GroupedSigmoidKeepsTheBestGroupsAndWeighsUnbiasedScores) {
  const std::vector<float> scores = {0.9f, 0.1f, 0.5f, 0.45f, 0.2f, 0.7f, 0.3f, 0.35f};
  const std::vector<float> bias = {0, 0, 0, 0, 0, 0, 0, 0.5f};
  RouterConfig config{8, 2, true, RoutingRule::grouped_sigmoid, 4, 2, 2.5f};
  int32_t ids[2];
  float weights[2];
  route_grouped(scores.data(), bias.data(), config, ids, weights);
  EXPECT_EQ(ids[0], 0);
  EXPECT_EQ(ids[1], 7);
  EXPECT_FLOAT_EQ(weights[0], 0.9f / 1.25f * 2.5f);
  EXPECT_FLOAT_EQ(weights[1], 0.35f / 1.25f * 2.5f);

  config.normalize_top_k = false;
  route_grouped(scores.data(), bias.data(), config, ids, weights);
  EXPECT_FLOAT_EQ(weights[0], 0.9f * 2.5f);
  EXPECT_FLOAT_EQ(weights[1], 0.35f * 2.5f);

  // Without the bias expert 7 is not chosen; with all four groups, expert 5 is.
  route_grouped(scores.data(), nullptr, config, ids, weights);
  EXPECT_EQ(ids[1], 2);  // groups 0 (1.0) and 1 (0.95): experts 0 and 2
  config.topk_group = 4;
  route_grouped(scores.data(), bias.data(), config, ids, weights);
  EXPECT_EQ(ids[0], 0);
  EXPECT_EQ(ids[1], 7);
  config.top_k = 3;
  int32_t three[3];
  float three_weights[3];
  route_grouped(scores.data(), bias.data(), config, three, three_weights);
  EXPECT_EQ(three[2], 5);
}

// route_tokens runs the sigmoid on the backend and the choice above per row.
TEST(Router, RouteTokensAppliesTheSigmoidBeforeChoosing) {
  CpuBackend cpu;
  const std::vector<float> scores = {0.9f, 0.1f, 0.5f, 0.45f, 0.2f, 0.7f, 0.3f, 0.35f};
  std::vector<float> logits;
  for (const float s : scores) logits.push_back(std::log(s / (1 - s)));
  std::vector<float> bias = {0, 0, 0, 0, 0, 0, 0, 0.5f};
  std::vector<float> weights(2);
  std::vector<int32_t> ids(2);
  const Tensor bias_tensor = Tensor::view(bias.data(), DType::f32, {8});
  route_tokens(cpu, Tensor::view(logits.data(), DType::f32, {1, 8}),
               RouterConfig{8, 2, true, RoutingRule::grouped_sigmoid, 4, 2, 2.5f},
               Tensor::view(weights.data(), DType::f32, {1, 2}),
               Tensor::view(ids.data(), DType::i32, {1, 2}), &bias_tensor);
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 7}));
  EXPECT_NEAR(weights[0], 1.8f, 1e-5f);
  EXPECT_NEAR(weights[1], 0.7f, 1e-5f);
}

// DeepSeek-V2's group_limited_greedy, worked by hand: 8 experts in 4 groups
// of 2, 2 groups kept, top 3, weights times 16, not normalised. Softmax
// probabilities (they sum to 1):
//   group 0: 0.30 0.01 (best 0.30)   group 1: 0.20 0.19 (best 0.20)
//   group 2: 0.22 0.015 (best 0.22)  group 3: 0.045 0.02 (best 0.045)
// A group is scored by its best: groups 0 and 2 are kept, so the top three
// are experts 0, 4 and 5. Without group limiting expert 2 (0.20) would
// beat expert 5; scored by their two best (V3's rule) groups 1 and 0 would
// be kept (experts 0, 2, 3).
const std::vector<float> kV2Probabilities = {0.30f, 0.01f,  0.20f,  0.19f,
                                             0.22f, 0.015f, 0.045f, 0.02f};

TEST(Router, GroupedSoftmaxKeepsTheGroupsWithTheBestProbability) {
  RouterConfig config{8, 3, false, RoutingRule::grouped_softmax, 4, 2, 16.0f};
  int32_t ids[3];
  float weights[3];
  route_grouped(kV2Probabilities.data(), nullptr, config, ids, weights);
  EXPECT_EQ(std::vector<int32_t>(ids, ids + 3), (std::vector<int32_t>{0, 4, 5}));
  EXPECT_FLOAT_EQ(weights[0], 0.30f * 16.0f);
  EXPECT_FLOAT_EQ(weights[1], 0.22f * 16.0f);
  EXPECT_FLOAT_EQ(weights[2], 0.015f * 16.0f);

  // Every group kept: plain top-k, which takes expert 2 instead of 5.
  config.topk_group = 4;
  route_grouped(kV2Probabilities.data(), nullptr, config, ids, weights);
  EXPECT_EQ(std::vector<int32_t>(ids, ids + 3), (std::vector<int32_t>{0, 4, 2}));
  // V3's group score (two best) on the same numbers keeps groups 1 and 0.
  config.topk_group = 2;
  config.rule = RoutingRule::grouped_sigmoid;
  route_grouped(kV2Probabilities.data(), nullptr, config, ids, weights);
  EXPECT_EQ(std::vector<int32_t>(ids, ids + 3), (std::vector<int32_t>{0, 2, 3}));
}

// route_tokens runs the softmax on the backend, then the grouped choice;
// greedy (one group) is plain top-k over the softmax, scaled.
TEST(Router, RouteTokensGroupedSoftmaxAndGreedy) {
  CpuBackend cpu;
  std::vector<float> logits;
  for (const float p : kV2Probabilities) logits.push_back(std::log(p) + 3.0f);  // softmax: p
  const auto route = [&](const RouterConfig& config) {
    auto scratch = logits;
    std::vector<float> weights(3);
    std::vector<int32_t> ids(3);
    route_tokens(cpu, Tensor::view(scratch.data(), DType::f32, {1, 8}), config,
                 Tensor::view(weights.data(), DType::f32, {1, 3}),
                 Tensor::view(ids.data(), DType::i32, {1, 3}));
    return std::pair{ids, weights};
  };
  const auto [limited, limited_weights] =
      route(RouterConfig{8, 3, false, RoutingRule::grouped_softmax, 4, 2, 16.0f});
  EXPECT_EQ(limited, (std::vector<int32_t>{0, 4, 5}));
  EXPECT_NEAR(limited_weights[0], 0.30f * 16.0f, 1e-5f);
  EXPECT_NEAR(limited_weights[1], 0.22f * 16.0f, 1e-5f);
  EXPECT_NEAR(limited_weights[2], 0.015f * 16.0f, 1e-5f);
  const auto [greedy, greedy_weights] =
      route(RouterConfig{8, 3, false, RoutingRule::grouped_softmax, 1, 1, 2.5f});
  EXPECT_EQ(greedy, (std::vector<int32_t>{0, 4, 2}));
  EXPECT_NEAR(greedy_weights[2], 0.20f * 2.5f, 1e-6f);
  // Normalised, then scaled (the rule the router shares with V3).
  const auto [normalised, normalised_weights] =
      route(RouterConfig{8, 3, true, RoutingRule::grouped_softmax, 4, 2, 16.0f});
  EXPECT_NEAR(normalised_weights[0], 0.30f / 0.535f * 16.0f, 1e-4f);

  // V2 has no correction bias; one given is a mistake, not ignored.
  std::vector<float> bias(8, 0.0f), scratch = logits, weights(3);
  std::vector<int32_t> ids(3);
  const Tensor bias_tensor = Tensor::view(bias.data(), DType::f32, {8});
  EXPECT_THROW(route_tokens(cpu, Tensor::view(scratch.data(), DType::f32, {1, 8}),
                            RouterConfig{8, 3, false, RoutingRule::grouped_softmax, 4, 2, 1.0f},
                            Tensor::view(weights.data(), DType::f32, {1, 3}),
                            Tensor::view(ids.data(), DType::i32, {1, 3}), &bias_tensor),
               Error);
}

// The experts' FFNs run as grouped matmuls, a few thousand rows per group:
// a token's MoE output has the same bits alone as among 3000 tokens (6000
// rows, two groups), so grouping depends on neither the batch nor the split.
TEST(MoeForward, ATokensOutputIsTheSameAloneAndInGroupsOfExperts) {
  CpuBackend cpu;
  const int64_t hidden = 32, inter = 24, experts = 6, n = 3000;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<std::vector<float>> storage;
  storage.reserve(4 + 3 * experts);
  auto tensor = [&](std::initializer_list<int64_t> shape) {
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    storage.emplace_back(static_cast<size_t>(count));
    for (float& v : storage.back()) v = normal(rng);
    return Tensor::view(storage.back().data(), DType::f32, shape);
  };
  MoeWeights moe;
  moe.router = tensor({experts, hidden});
  for (int e = 0; e < experts; ++e)
    moe.experts.push_back({tensor({inter, hidden}), tensor({inter, hidden}), tensor({hidden, inter})});
  const Tensor x = tensor({n, hidden});
  std::vector<float> batched(static_cast<size_t>(n * hidden));
  moe_forward(cpu, x, moe, {static_cast<int>(experts), 2, true},
              Tensor::view(batched.data(), DType::f32, {n, hidden}));
  for (int64_t t : {int64_t{0}, int64_t{1}, int64_t{777}, n - 1}) {
    std::vector<float> alone(static_cast<size_t>(hidden));
    moe_forward(cpu, x.rows(t, 1), moe, {static_cast<int>(experts), 2, true},
                Tensor::view(alone.data(), DType::f32, {1, hidden}));
    EXPECT_EQ(std::memcmp(alone.data(), batched.data() + t * hidden, hidden * sizeof(float)), 0)
        << "token " << t;
  }
}

}  // namespace
}  // namespace hive
