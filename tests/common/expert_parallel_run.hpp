#pragma once
// One rank of the expert-parallel model tests, whatever carries its
// collectives (threads over InProcessGroup, processes over MPI): its share of
// the prompts (round-robin), stepped until no rank has work left, joining the
// MoE collectives with idle forwards once its own work is done, as a real
// multi-rank step does. With live balancing the ranks re-plan replicas
// between steps (each rank runs the same ReplicaBalancer on the all-reduced
// step load, so they agree).
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "moe/expert_placement.hpp"
#include "moe/replica_balancer.hpp"
#include "parallel/communicator.hpp"
#include "parallel/in_process_communicator.hpp"
#include "runtime/engine/llm_engine.hpp"
#include "tests/common/parallel_requests.hpp"

namespace hive::test {

using ExpertLoad = std::vector<std::vector<int64_t>>;  // [layer][expert]

struct RankRun {
  std::map<std::string, SequenceOutput> outputs;  // this rank's requests
  ExpertLoad load;                                // tokens this rank routed
  int switches = 0;                               // placements switched to
  EngineStats stats;                              // this rank's engine at the end
};

// The step's load per expert, summed over layers and over all ranks (counts
// this small are exact in f32).
inline std::vector<int64_t> step_load(Communicator& comm, const ExpertLoad& before,
                                      const ExpertLoad& after, int num_experts) {
  std::vector<float> sum(static_cast<size_t>(num_experts), 0.0f);
  for (size_t l = 0; l < after.size(); ++l)
    for (size_t e = 0; e < after[l].size(); ++e)
      sum[e] += static_cast<float>(after[l][e] -
                                   (l < before.size() && e < before[l].size() ? before[l][e] : 0));
  comm.all_reduce_sum(Tensor::view(sum.data(), DType::f32, {num_experts}));
  return {sum.begin(), sum.end()};
}

// live: re-plan replicas after every step (the most switches a run can have).
inline RankRun run_expert_parallel_rank(Model& model, Communicator& comm,
                                        ExpertPlacement placement,
                                        const std::vector<Request>& all, bool live,
                                        const EngineConfig& config = parallel_engine_config()) {
  RankRun run;
  LLMEngine engine(model, config);
  ReplicaBalancer balancer(
      placement, {.period_steps = 1, .window_steps = 2, .slots_per_rank = 2, .threshold = 1.0});
  const ExpertParallelContext ep{&comm, &placement, &run.load};
  engine.set_expert_parallel(&ep);
  for (size_t i = static_cast<size_t>(comm.rank()); i < all.size();
       i += static_cast<size_t>(comm.world_size()))
    engine.add_request(all[i]);
  std::vector<SequenceOutput> done;
  for (;;) {
    float busy = engine.has_unfinished() ? 1.0f : 0.0f;
    comm.all_reduce_sum(Tensor::view(&busy, DType::f32, {1}));
    if (busy == 0.0f) break;
    const ExpertLoad before = run.load;
    for (SequenceOutput& out : engine.step()) done.push_back(std::move(out));
    if (!live) continue;
    // Between steps, on every rank alike: never inside one.
    if (auto replicas =
            balancer.add_step(step_load(comm, before, run.load, placement.num_experts()))) {
      placement.set_replicas(*replicas);
      ++run.switches;
    }
  }
  for (SequenceOutput& out : done) run.outputs[out.request_id] = std::move(out);
  run.stats = engine.stats();
  return run;
}

// Every rank of a group of `world` threads over InProcessGroup, each rank's
// run in rank order.
inline std::vector<RankRun> run_expert_parallel_in_process(Model& model,
                                                           const std::vector<Request>& requests,
                                                           int world, PlacementKind kind,
                                                           bool live,
                                                           const EngineConfig& config =
                                                               parallel_engine_config()) {
  InProcessGroup group(world);
  const ExpertPlacement placement(static_cast<int>(model.config().num_experts), world, kind);
  std::vector<RankRun> runs(static_cast<size_t>(world));
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r)
    ranks.emplace_back([&, r, comm = std::shared_ptr<Communicator>(group.communicator(r))] {
      try {
        runs[static_cast<size_t>(r)] =
            run_expert_parallel_rank(model, *comm, placement, requests, live, config);
      } catch (const std::exception& e) {
        // Its peers would wait in a collective for ever: fail loudly instead.
        std::fprintf(stderr, "rank %d: %s\n", r, e.what());
        std::abort();
      }
    });
  for (std::thread& t : ranks) t.join();
  return runs;
}

}  // namespace hive::test
