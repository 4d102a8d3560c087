// Data-parallel attention + expert parallelism at the model level, on the MoE
// fixture checkpoints and the bundled MoE target: prompts split across 1, 2 and 4 ranks (one thread
// and one LLMEngine, i.e. one KV cache, per rank; contiguous and round-robin placement) must decode
// greedily to the same tokens, with the same logits bit for bit (the README's "bit-identical to one
// rank"), as one plain engine running them all. Ranks
// step together; a rank that has run out of work keeps joining the MoE collectives with idle
// forwards, as a real multi-rank step does. Expert load summed over ranks
// must not depend on the world size either. With live balancing the ranks
// re-plan replicas between steps (each rank runs the same ReplicaBalancer
// on the all-reduced step load, so they agree) and the outputs must not
// change.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "runtime/engine/llm_engine.hpp"
#include "tests/common/expert_parallel_run.hpp"
#include "tests/common/model_dirs.hpp"
#include "tests/common/parallel_requests.hpp"
#include "tests/common/random.hpp"

namespace hive {
namespace {

using test::model_dir;
constexpr int kNumPrompts = 7;
using Load = test::ExpertLoad;

struct ParallelRun {
  std::map<std::string, SequenceOutput> outputs;
  Load load;         // summed over ranks
  int switches = 0;  // placements switched to (rank 0's count; every rank agrees)
};

ParallelRun run_parallel(Model& model, const std::vector<Request>& requests, int world,
                         PlacementKind kind, bool live) {
  std::vector<test::RankRun> ranks =
      test::run_expert_parallel_in_process(model, requests, world, kind, live);
  ParallelRun run;
  run.load = ranks[0].load;
  run.switches = ranks[0].switches;
  for (const test::RankRun& rank : ranks)
    EXPECT_EQ(rank.switches, run.switches) << "the ranks disagree on the placement";
  for (size_t r = 0; r < ranks.size(); ++r) {
    run.outputs.merge(ranks[r].outputs);
    for (size_t l = 0; l < run.load.size() && r > 0; ++l)
      for (size_t e = 0; e < run.load[l].size(); ++e) run.load[l][e] += ranks[r].load[l][e];
  }
  return run;
}

class ModelExpertParallel : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelExpertParallel, SplitsAcrossRanksLikeOneRank) {
  SCOPED_TRACE(testing::Message() << GetParam() << ", seed " << test::test_seed());
  CpuBackend cpu;
  Model model(model_dir(GetParam()), cpu);
  const std::vector<Request> requests =
      test::parallel_requests(model.config().vocab_size, kNumPrompts);
  const std::vector<RequestOutput> expected =
      LLMEngine(model, test::parallel_engine_config()).generate(requests);
  Load reference_load;
  for (const int world : {1, 2, 4})
    for (const PlacementKind kind : {PlacementKind::contiguous, PlacementKind::round_robin})
      for (const bool live : {false, true}) {
        if (live && world == 1) continue;
        SCOPED_TRACE(testing::Message()
                     << "world " << world << ", placement "
                     << (kind == PlacementKind::contiguous ? "contiguous" : "round_robin")
                     << (live ? ", live balancing" : ""));
        const ParallelRun run = run_parallel(model, requests, world, kind, live);
        if (live) {
          EXPECT_GE(run.switches, 1);
        }
        ASSERT_EQ(run.outputs.size(), expected.size());
        double max_diff = 0;
        int64_t logits_differing = 0;
        for (const RequestOutput& want : expected) {
          const SequenceOutput& a = want.samples.at(0);
          const SequenceOutput& b = run.outputs.at(want.request_id);
          EXPECT_EQ(b.token_ids, a.token_ids) << want.request_id;
          ASSERT_EQ(b.logits.size(), a.logits.size()) << want.request_id;
          for (size_t t = 0; t < a.logits.size(); ++t) {
            ASSERT_EQ(b.logits[t].size(), a.logits[t].size()) << want.request_id;
            for (size_t v = 0; v < a.logits[t].size(); ++v) {
              if (std::bit_cast<uint32_t>(a.logits[t][v]) != std::bit_cast<uint32_t>(b.logits[t][v]))
                ++logits_differing;
              max_diff = std::max(max_diff, std::abs(double{a.logits[t][v]} - b.logits[t][v]));
            }
          }
        }
        // A token's experts run on other ranks, but each expert's sum keeps
        // its order and the combine adds the results in expert order, as one
        // rank does (moe/expert_parallel.hpp): the bits match.
        EXPECT_EQ(logits_differing, 0) << "logits differ in their bits; max |difference| "
                                       << max_diff;
        std::printf("[ %s ] world %d, %s%s: max |logits difference| %g, %d placement switches\n",
                    GetParam().c_str(), world,
                    kind == PlacementKind::contiguous ? "contiguous" : "round_robin",
                    live ? " live" : "", max_diff, run.switches);
        // Every token computed in an MoE layer is routed to top_k experts (no
        // request is preempted here, so each token is computed once: the
        // prompt and every generated token but the last).
        int64_t computed = 0;
        for (const Request& r : requests)
          computed += static_cast<int64_t>(r.prompt_token_ids.size()) +
                      static_cast<int64_t>(run.outputs.at(r.id).token_ids.size()) - 1;
        ASSERT_EQ(run.load.size(), static_cast<size_t>(model.config().num_layers));
        for (size_t l = 0; l < run.load.size(); ++l) {
          int64_t routed = 0;
          for (const int64_t n : run.load[l]) routed += n;
          EXPECT_EQ(routed, model.config().is_moe_layer(static_cast<int64_t>(l))
                                ? computed * model.config().num_experts_per_token
                                : 0)
              << "layer " << l;
        }
        if (reference_load.empty()) reference_load = run.load;
        EXPECT_EQ(run.load, reference_load) << "expert load depends on the world size";
      }
}

INSTANTIATE_TEST_SUITE_P(MoeFixtures, ModelExpertParallel,
                         ::testing::Values("qwen3_moe", "mixtral", "qwen2_moe",
                                           "bundled/hive-moe-target", "deepseek_v3",
                                           "deepseek_v3_yarn", "deepseek_v2", "deepseek_v2_lite"));

}  // namespace
}  // namespace hive
