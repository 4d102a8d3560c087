#pragma once
// The worker actor: one per device rank. It owns that rank's physical KV
// cache (PagedKVCache) and a ModelRunner, which keeps each sequence's block
// table (plans carry only changes, see block_tables.hpp), and runs one step
// per message.
// Ranks are data parallel: each gets its own requests' plan and replies with
// their sampled tokens. For an MoE model the worker also owns its rank's
// communicator and expert placement; its MoE layers exchange tokens with the
// other ranks by all-to-all, so every rank runs every step (an idle rank
// joins with Model::forward_idle), and it reports the step's expert load.
// Under tensor parallelism the workers of the group hold one model between
// them (each its shard, its heads' KV) and all run the same plan.
//
// A step that throws is answered with an error naming the rank and the cause,
// then the worker quits: its KV contents can no longer be trusted. It first
// aborts its rank group, so peers waiting in a collective fail too instead of
// hanging. The scheduler fails the requests the workers held and spawns fresh
// workers on a fresh group.
#include <cstdint>
#include <memory>

#include <caf/actor_addr.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/type_ids.hpp"
#include "moe/expert_placement.hpp"
#include "parallel/communicator.hpp"
#include "parallel/rank_group.hpp"
#include "runtime/model/model.hpp"
#include "runtime/model/model_runner.hpp"
#include "runtime/model/paged_kv_cache.hpp"

namespace hive {

using worker_actor = caf::typed_actor<caf::replies_to<step_atom, WorkerStep>::with<WorkerResult>,
                                      caf::reacts_to<fault_atom>>;

// Everything a worker rank is built from; copied into each (re)started worker.
struct WorkerSpec {
  std::shared_ptr<Model> model;  // weights are read-only and shared by the ranks
  int32_t num_blocks = 0;        // device pool, including the null block
  int32_t block_size = 16;
  int32_t num_host_blocks = 0;
  int rank = 0;
  // MoE models: the ranks' group (one per worker generation) and placement.
  std::shared_ptr<RankGroup> group;
  PlacementKind placement = PlacementKind::contiguous;
  // > 1: the group is one tensor-parallel model; the worker loads its shard
  // of `model`'s checkpoint and runs every step with its peers.
  int tensor_parallel_size = 1;
  // The scheduler actor that spawned it: the worker tells it when it has
  // started (ready_atom) and stops when it does.
  caf::actor_addr scheduler;
  DType kv_cache_dtype = kDefaultKVCacheDType;
};

struct WorkerState {
  std::unique_ptr<Model> shard;  // tensor parallelism: this rank's part of the model
  std::unique_ptr<PagedKVCache> cache;
  std::unique_ptr<ModelRunner> runner;
  std::shared_ptr<RankGroup> group;
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<ExpertPlacement> placement;
  std::vector<std::vector<int64_t>> load;    // [layer][expert], this step: tokens routed
  std::vector<std::vector<int64_t>> remote;  // of those, sent to another rank
  ExpertParallelContext ep;
  int rank = 0;
  bool fail_next_step = false;  // fault injection: the next step throws
  static inline const char* name = "hive.worker";
};

worker_actor::behavior_type worker(worker_actor::stateful_pointer<WorkerState> self,
                                   WorkerSpec spec);

}  // namespace hive
