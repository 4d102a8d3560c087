// Data-parallel attention + expert parallelism at the model level, on the MoE
// fixture checkpoints and the bundled MoE target: prompts split across 1, 2 and 4 ranks (one thread
// and one LLMEngine, i.e. one KV cache, per rank; contiguous and round-robin placement) must decode
// greedily to the same tokens, with logits within 1e-5, as one plain engine running them all. Ranks
// step together; a rank that has run out of work keeps joining the MoE collectives with idle
// forwards, as a real multi-rank step does. Expert load summed over ranks
// must not depend on the world size either. With live balancing the ranks
// re-plan replicas between steps (each rank runs the same ReplicaBalancer
// on the all-reduced step load, so they agree) and the outputs must not
// change.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <thread>

#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/error.hpp"
#include "moe/in_process_communicator.hpp"
#include "moe/replica_balancer.hpp"
#include "runtime/engine/llm_engine.hpp"
#include "tests/common/model_dirs.hpp"
#include "tests/common/parallel_requests.hpp"
#include "tests/common/random.hpp"

namespace hive {
namespace {

using test::model_dir;
constexpr int kNumPrompts = 7;
using Load = std::vector<std::vector<int64_t>>;  // [layer][expert]

// The step's load per expert, summed over layers and over all ranks (counts
// this small are exact in f32).
std::vector<int64_t> step_load(Communicator& comm, const Load& before, const Load& after,
                               int num_experts) {
  std::vector<float> sum(static_cast<size_t>(num_experts), 0.0f);
  for (size_t l = 0; l < after.size(); ++l)
    for (size_t e = 0; e < after[l].size(); ++e)
      sum[e] += static_cast<float>(after[l][e] -
                                   (l < before.size() && e < before[l].size() ? before[l][e] : 0));
  comm.all_reduce_sum(Tensor::view(sum.data(), DType::f32, {num_experts}));
  return {sum.begin(), sum.end()};
}

// Rank `rank` of the group: its share of the prompts (round-robin), stepped
// until no rank has work left. live: re-plan replicas after every step
// (the most switches a run can have); switches counts the placements.
void run_rank(Model& model, Communicator& comm, ExpertPlacement placement,
              const std::vector<Request>& all, std::map<std::string, SequenceOutput>& outputs,
              Load& load, bool live, int& switches) {
  LLMEngine engine(model, test::parallel_engine_config());
  ReplicaBalancer balancer(
      placement, {.period_steps = 1, .window_steps = 2, .slots_per_rank = 2, .threshold = 1.0});
  const ExpertParallelContext ep{&comm, &placement, &load};
  engine.set_expert_parallel(&ep);
  for (size_t i = static_cast<size_t>(comm.rank()); i < all.size();
       i += static_cast<size_t>(comm.world_size()))
    engine.add_request(all[i]);
  std::vector<SequenceOutput> done;
  for (;;) {
    float busy = engine.has_unfinished() ? 1.0f : 0.0f;
    comm.all_reduce_sum(Tensor::view(&busy, DType::f32, {1}));
    if (busy == 0.0f) break;
    const Load before = load;
    for (SequenceOutput& out : engine.step()) done.push_back(std::move(out));
    if (!live) continue;
    // Between steps, on every rank alike: never inside one.
    if (auto replicas = balancer.add_step(step_load(comm, before, load, placement.num_experts()))) {
      placement.set_replicas(*replicas);
      ++switches;
    }
  }
  for (SequenceOutput& out : done) outputs[out.request_id] = std::move(out);
}

struct ParallelRun {
  std::map<std::string, SequenceOutput> outputs;
  Load load;         // summed over ranks
  int switches = 0;  // placements switched to (rank 0's count; every rank agrees)
};

ParallelRun run_parallel(Model& model, const std::vector<Request>& requests, int world,
                         PlacementKind kind, bool live) {
  InProcessGroup group(world);
  const ExpertPlacement placement(static_cast<int>(model.config().num_experts), world, kind);
  std::vector<std::map<std::string, SequenceOutput>> outputs(static_cast<size_t>(world));
  std::vector<Load> loads(static_cast<size_t>(world));
  std::vector<int> switches(static_cast<size_t>(world), 0);
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r)
    ranks.emplace_back([&, r, comm = std::shared_ptr<Communicator>(group.communicator(r))] {
      try {
        run_rank(model, *comm, placement, requests, outputs[static_cast<size_t>(r)],
                 loads[static_cast<size_t>(r)], live, switches[static_cast<size_t>(r)]);
      } catch (const std::exception& e) {
        // Its peers would wait in a collective for ever: fail loudly instead.
        std::fprintf(stderr, "rank %d: %s\n", r, e.what());
        std::abort();
      }
    });
  for (std::thread& t : ranks) t.join();
  ParallelRun run;
  run.load = loads[0];
  run.switches = switches[0];
  for (const int s : switches) EXPECT_EQ(s, switches[0]) << "the ranks disagree on the placement";
  for (int r = 0; r < world; ++r) {
    const auto i = static_cast<size_t>(r);
    run.outputs.merge(outputs[i]);
    for (size_t l = 0; l < run.load.size() && r > 0; ++l)
      for (size_t e = 0; e < run.load[l].size(); ++e) run.load[l][e] += loads[i][l][e];
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
        for (const RequestOutput& want : expected) {
          const SequenceOutput& a = want.samples.at(0);
          const SequenceOutput& b = run.outputs.at(want.request_id);
          EXPECT_EQ(b.token_ids, a.token_ids) << want.request_id;
          ASSERT_EQ(b.logits.size(), a.logits.size()) << want.request_id;
          for (size_t t = 0; t < a.logits.size(); ++t)
            for (size_t v = 0; v < a.logits[t].size(); ++v)
              max_diff = std::max(max_diff, std::abs(double{a.logits[t][v]} - b.logits[t][v]));
        }
        EXPECT_LE(max_diff, 1e-5) << "max |logits difference|";
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
