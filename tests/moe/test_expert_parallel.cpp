// Expert parallelism against the single-rank MoE layer, on the MoE fixture
// checkpoints: world sizes 1, 2, 3 and 4 (3 does not divide the experts; one
// rank with no tokens), contiguous and
// round-robin placement, with and without a replicated hot expert. Each rank
// gets only its own experts' weights; results must be bit-identical.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>
#include <tuple>

#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "moe/expert_parallel.hpp"
#include "parallel/in_process_communicator.hpp"
#include "runtime/model/model.hpp"
#include "runtime/model/model_weights.hpp"
#include "tests/common/random.hpp"

namespace hive {
namespace {

const std::filesystem::path kModels = std::filesystem::path(HIVE_TEST_DATA) / "models";

struct Case {
  const char* model;
  int world_size;
  PlacementKind placement;
  bool replicate_expert_0;
};

class ExpertParallelTest : public ::testing::TestWithParam<Case> {};

// The weights a rank holds: its experts; the others are null (any use throws).
MoeWeights local_weights(const MoeWeights& all, const ExpertPlacement& placement, int rank) {
  MoeWeights local = all;
  for (int e = 0; e < placement.num_experts(); ++e)
    if (!placement.holds(rank, e)) {
      FfnWeights& ffn = local.experts[static_cast<size_t>(e)];
      ffn.gate.data = ffn.up.data = ffn.down.data = nullptr;
    }
  return local;
}

TEST_P(ExpertParallelTest, MatchesTheSingleRankLayerExactly) {
  const Case c = GetParam();
  const auto dir = kModels / c.model;
  const ModelConfig config = load_model_config(dir);
  const WeightStore store(dir);
  const ModelWeights model = bind_weights(config, store);
  const RouterConfig router = router_config(config);
  const int64_t hidden = config.hidden_size;
  // Tokens per rank; with 4 ranks one of them has none.
  const std::vector<int64_t> split = c.world_size == 1   ? std::vector<int64_t>{13}
                                     : c.world_size == 2 ? std::vector<int64_t>{6, 7}
                                     : c.world_size == 3 ? std::vector<int64_t>{4, 0, 9}
                                                         : std::vector<int64_t>{5, 0, 6, 2};
  const int64_t total = 13;
  std::mt19937_64 rng(test::test_seed());
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  auto x = test::random_floats(rng, static_cast<size_t>(total * hidden));

  ExpertPlacement placement(router.num_experts, c.world_size, c.placement);
  if (c.replicate_expert_0)
    for (int r = 0; r < c.world_size; ++r) placement.add_replica(0, r);

  for (const LayerWeights& layer : model.layers) {
    if (!layer.is_moe) continue;
    CpuBackend cpu;
    std::vector<float> expected(x.size());
    moe_forward(cpu, Tensor::view(x.data(), DType::f32, {total, hidden}), layer.moe, router,
                Tensor::view(expected.data(), DType::f32, {total, hidden}));

    std::vector<float> got(x.size(), NAN);
    std::vector<std::vector<int64_t>> loads(
        static_cast<size_t>(c.world_size),
        std::vector<int64_t>(static_cast<size_t>(router.num_experts)));
    std::vector<std::vector<int64_t>> remote = loads;
    InProcessGroup group(c.world_size);
    std::vector<std::thread> ranks;
    int64_t first = 0;
    for (int r = 0; r < c.world_size; ++r) {
      const int64_t n = split[static_cast<size_t>(r)];
      ranks.emplace_back([&, r, first, n] {
        CpuBackend backend;
        auto comm = group.communicator(r);
        const MoeWeights weights = local_weights(layer.moe, placement, r);
        moe_forward_expert_parallel(
            backend, *comm, placement,
            Tensor::view(x.data() + first * hidden, DType::f32, {n, hidden}), weights, router,
            Tensor::view(got.data() + first * hidden, DType::f32, {n, hidden}),
            &loads[static_cast<size_t>(r)], &remote[static_cast<size_t>(r)]);
      });
      first += n;
    }
    for (auto& t : ranks) t.join();
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], expected[i]) << "element " << i;
    int64_t routed = 0;
    for (const auto& load : loads)
      for (int64_t count : load) routed += count;
    EXPECT_EQ(routed, total * router.top_k);
    // Traffic: a rank's tokens for an expert it holds (its own or a replica)
    // stay; all others cross.
    int64_t crossed = 0;
    for (int r = 0; r < c.world_size; ++r)
      for (int e = 0; e < router.num_experts; ++e) {
        const auto at = [&](const auto& counts) {
          return counts[static_cast<size_t>(r)][static_cast<size_t>(e)];
        };
        EXPECT_EQ(at(remote), placement.holds(r, e) ? 0 : at(loads))
            << "rank " << r << ", expert " << e;
        crossed += at(remote);
      }
    if (c.world_size > 1) {
      EXPECT_GT(crossed, 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ExpertParallelTest,
                         ::testing::Values(Case{"qwen3_moe", 1, PlacementKind::contiguous, false},
                                           Case{"qwen3_moe", 2, PlacementKind::contiguous, false},
                                           Case{"qwen3_moe", 4, PlacementKind::contiguous, false},
                                           Case{"qwen3_moe", 3, PlacementKind::contiguous, false},
                                           Case{"qwen3_moe", 3, PlacementKind::round_robin, true},
                                           Case{"qwen3_moe", 4, PlacementKind::round_robin, false},
                                           Case{"qwen3_moe", 4, PlacementKind::round_robin, true},
                                           Case{"mixtral", 2, PlacementKind::round_robin, false},
                                           Case{"mixtral", 4, PlacementKind::contiguous, true},
                                           Case{"qwen2_moe", 2, PlacementKind::contiguous, false},
                                           Case{"qwen2_moe", 4, PlacementKind::round_robin, true},
                                           Case{"deepseek_v3", 2, PlacementKind::contiguous, false},
                                           Case{"deepseek_v3", 4, PlacementKind::round_robin, true},
                                           Case{"deepseek_v3_yarn", 3, PlacementKind::round_robin,
                                                false},
                                           Case{"deepseek_v2", 4, PlacementKind::round_robin, true},
                                           Case{"deepseek_v2_lite", 2, PlacementKind::contiguous,
                                                false}),
                         [](const auto& param_info) {
                           const Case& c = param_info.param;
                           return std::string(c.model) + "_ep" + std::to_string(c.world_size) +
                                  (c.placement == PlacementKind::contiguous ? "_contiguous"
                                                                            : "_round_robin") +
                                  (c.replicate_expert_0 ? "_replica" : "");
                         });

TEST(ExpertPlacement, ContiguousAndRoundRobinAndReplicas) {
  ExpertPlacement contiguous(8, 3, PlacementKind::contiguous);
  EXPECT_EQ(contiguous.local_experts(0), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(contiguous.local_experts(2), (std::vector<int>{6, 7}));
  ExpertPlacement round_robin(8, 3, PlacementKind::round_robin);
  EXPECT_EQ(round_robin.local_experts(1), (std::vector<int>{1, 4, 7}));
  EXPECT_EQ(round_robin.target_rank(4, 0), 1);
  round_robin.add_replica(4, 0);
  EXPECT_EQ(round_robin.target_rank(4, 0), 0);  // served locally now
  // Others spread over the holders (0 and home 1) in turn, from their rank.
  EXPECT_EQ(round_robin.target_rank(4, 2, 0), 0);
  EXPECT_EQ(round_robin.target_rank(4, 2, 1), 1);
  EXPECT_EQ(round_robin.target_rank(4, 1, 0), 1);  // home stays home
  EXPECT_EQ(round_robin.holders(4), (std::vector<int>{0, 1}));
  round_robin.set_replicas({{}, {}, {4, 2}});  // 2 is rank 2's own: ignored
  EXPECT_EQ(round_robin.holders(4), (std::vector<int>{1, 2}));
  EXPECT_EQ(round_robin.replicas(), (std::vector<std::vector<int32_t>>{{}, {}, {4}}));
  EXPECT_THROW(ExpertPlacement(2, 4, PlacementKind::contiguous), Error);
  // Uneven counts: contiguous blocks differ by at most one expert, and every
  // rank holds some (ceil-sized blocks left the last rank of 6 on 4 empty).
  for (const auto& [experts, ranks, sizes] : {std::tuple{5, 4, std::vector<size_t>{2, 1, 1, 1}},
                                              std::tuple{6, 4, std::vector<size_t>{2, 2, 1, 1}},
                                              std::tuple{60, 16, std::vector<size_t>(12, 4)}}) {
    const ExpertPlacement placement(experts, ranks, PlacementKind::contiguous);
    std::vector<size_t> got;
    std::vector<int> all;
    for (int r = 0; r < ranks; ++r) {
      const std::vector<int> local = placement.local_experts(r);
      got.push_back(local.size());
      all.insert(all.end(), local.begin(), local.end());
    }
    std::vector<size_t> want = sizes;
    want.resize(static_cast<size_t>(ranks), 3);  // 60 on 16: twelve ranks of 4, four of 3
    EXPECT_EQ(got, want) << experts << " experts on " << ranks << " ranks";
    for (int e = 0; e < experts; ++e) EXPECT_EQ(all[static_cast<size_t>(e)], e);
  }
  EXPECT_THROW(parse_placement_kind("random"), Error);
}

}  // namespace
}  // namespace hive
