// A live placement switch under expert parallelism: 4 ranks, each starting
// with only its home experts' weights, run the MoE layer, switch to a
// placement with replicas (their weights copied from the home rank over the
// communicator), run again, switch back (replicas dropped), run again. Every
// step must be bit-identical to the single-rank layer, and every routed
// (token, expert) row computed exactly once, on a rank holding the expert.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "kernels/cpu/cpu_backend.hpp"
#include "moe/expert_parallel.hpp"
#include "moe/replica_weights.hpp"
#include "parallel/in_process_communicator.hpp"
#include "runtime/model/model_weights.hpp"
#include "tests/common/random.hpp"

namespace hive {
namespace {

const std::filesystem::path kModels = std::filesystem::path(HIVE_TEST_DATA) / "models";
constexpr int kWorld = 4;

using Counts = std::vector<std::vector<int64_t>>;  // [rank][expert]

// The weights a rank holds: its home experts; the others keep only dtype
// and shape (any use throws).
MoeWeights home_weights(const MoeWeights& all, const ExpertPlacement& placement, int rank) {
  MoeWeights local = all;
  for (int e = 0; e < placement.num_experts(); ++e)
    if (!placement.holds(rank, e)) {
      FfnWeights& ffn = local.experts[static_cast<size_t>(e)];
      ffn.gate.data = ffn.up.data = ffn.down.data = nullptr;
    }
  return local;
}

int64_t sum_over_ranks(const Counts& counts, int expert) {
  int64_t sum = 0;
  for (const auto& rank : counts) sum += rank[static_cast<size_t>(expert)];
  return sum;
}

class ReplicaSwitchTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ReplicaSwitchTest, OutputsAndTokenCountsSurviveTheSwitch) {
  const auto dir = kModels / GetParam();
  const ModelConfig config = load_model_config(dir);
  const WeightStore store(dir);
  const ModelWeights model = bind_weights(config, store);
  const RouterConfig router{static_cast<int>(config.num_experts),
                            static_cast<int>(config.num_experts_per_token), config.norm_topk_prob};
  const int experts = router.num_experts;
  ASSERT_GE(experts, kWorld);
  const int64_t hidden = config.hidden_size, per_rank = 7, total = per_rank * kWorld;
  const LayerWeights* layer = nullptr;
  for (const LayerWeights& l : model.layers)
    if (l.is_moe && !layer) layer = &l;
  ASSERT_NE(layer, nullptr);

  // Homes, then expert 0 (home: rank 0) on every rank and the last expert
  // (home: rank 3) on rank 0 too, then homes again.
  const ExpertPlacement homes(experts, kWorld, PlacementKind::contiguous);
  ExpertPlacement replicated = homes;
  replicated.set_replicas({{experts - 1}, {0}, {0}, {0}});
  const std::vector<const ExpertPlacement*> steps{&homes, &replicated, &homes};

  std::mt19937_64 rng(test::test_seed());
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  std::vector<std::vector<float>> inputs, expected;
  for (size_t s = 0; s < steps.size(); ++s) {
    inputs.push_back(test::random_floats(rng, static_cast<size_t>(total * hidden)));
    expected.emplace_back(inputs.back().size());
    CpuBackend cpu;
    moe_forward(cpu, Tensor::view(inputs.back().data(), DType::f32, {total, hidden}), layer->moe,
                router, Tensor::view(expected.back().data(), DType::f32, {total, hidden}));
  }
  std::vector<std::vector<float>> got(steps.size(),
                                      std::vector<float>(static_cast<size_t>(total * hidden), NAN));
  const Counts zero(kWorld, std::vector<int64_t>(static_cast<size_t>(experts), 0));
  std::vector<Counts> routed(steps.size(), zero), computed(steps.size(), zero);
  std::vector<size_t> copies_held(kWorld);
  // One char per rank (not vector<bool>: its bits would be shared between threads).
  std::vector<char> replica_is_a_copy(kWorld, 1);

  InProcessGroup group(kWorld);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kWorld; ++r)
    ranks.emplace_back([&, r] {
      CpuBackend backend;
      auto comm = group.communicator(r);
      MoeWeights weights = home_weights(layer->moe, homes, r);
      ReplicaWeights replica_weights;
      const auto rank = static_cast<size_t>(r);
      for (size_t s = 0; s < steps.size(); ++s) {
        if (s > 0) {
          // Between steps: every rank switches, never inside one.
          replica_weights.switch_placement(backend, *comm, *steps[s - 1], *steps[s], weights);
          if (s == 1) {
            copies_held[rank] = replica_weights.num_copies();
            for (int e = 0; e < experts; ++e)
              if (steps[s]->holds(r, e) && homes.home_rank(e) != r)
                replica_is_a_copy[rank] = replica_is_a_copy[rank] &&
                                          weights.experts[static_cast<size_t>(e)].gate.data !=
                                              layer->moe.experts[static_cast<size_t>(e)].gate.data;
          }
        }
        const int64_t first = r * per_rank;
        moe_forward_expert_parallel(
            backend, *comm, *steps[s],
            Tensor::view(inputs[s].data() + first * hidden, DType::f32, {per_rank, hidden}),
            weights, router,
            Tensor::view(got[s].data() + first * hidden, DType::f32, {per_rank, hidden}),
            &routed[s][rank], nullptr, &computed[s][rank]);
      }
      EXPECT_EQ(replica_weights.num_copies(), 0u) << "rank " << r << " kept dropped replicas";
    });
  for (auto& t : ranks) t.join();

  EXPECT_EQ(copies_held, (std::vector<size_t>{1, 1, 1, 1}));
  EXPECT_EQ(replica_is_a_copy, std::vector<char>(kWorld, 1));
  for (size_t s = 0; s < steps.size(); ++s) {
    SCOPED_TRACE(testing::Message() << "step " << s);
    for (size_t i = 0; i < got[s].size(); ++i) ASSERT_EQ(got[s][i], expected[s][i]) << i;
    int64_t all_routed = 0;
    for (int e = 0; e < experts; ++e) {
      EXPECT_EQ(sum_over_ranks(computed[s], e), sum_over_ranks(routed[s], e)) << "expert " << e;
      all_routed += sum_over_ranks(routed[s], e);
      for (int r = 0; r < kWorld; ++r) {
        if (steps[s]->holds(r, e)) continue;
        EXPECT_EQ(computed[s][static_cast<size_t>(r)][static_cast<size_t>(e)], 0)
            << "rank " << r << " computed expert " << e;
      }
    }
    EXPECT_EQ(all_routed, total * router.top_k);
  }
  // With expert 0 on every rank, its rows never leave their rank: each
  // rank computes exactly the ones it routed.
  for (int r = 0; r < kWorld; ++r)
    EXPECT_EQ(computed[1][static_cast<size_t>(r)][0], routed[1][static_cast<size_t>(r)][0]);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ReplicaSwitchTest,
                         ::testing::Values("qwen3_moe", "mixtral", "qwen2_moe"));

}  // namespace
}  // namespace hive
