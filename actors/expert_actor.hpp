#pragma once
// The expert actor: owns the expert placement policy and the per-layer,
// per-expert load statistics (ExpertLoad). The scheduler sends it the load
// delta of every step (tokens routed, and of those the tokens sent to another
// rank; summed over the worker ranks' replies), one way. It answers with a
// replica placement (replicas_atom, [rank] -> experts) in one of two modes:
//
// - fixed once: after the first step with routed tokens, the hottest
//   `replicate_hot_experts` experts on every rank, never revisited;
// - live (rebalance.period_steps > 0): a ReplicaBalancer over a sliding
//   window of the per-expert load re-plans every period when the predicted
//   per-rank imbalance exceeds the threshold.
//
// The scheduler hands a placement to all workers in the same step, so every
// rank switches at the same step boundary, never inside a step.
#include <cstdint>
#include <optional>
#include <vector>

#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/type_ids.hpp"
#include "moe/expert_load.hpp"
#include "moe/replica_balancer.hpp"

namespace hive {

using expert_actor =
    caf::typed_actor<caf::reacts_to<load_atom, std::vector<int64_t>, std::vector<int64_t>>,
                     caf::replies_to<metrics_atom>::with<ExpertStats>>;

struct ExpertSetup {
  int num_layers = 0;
  int num_experts = 0;  // 0: a dense model, nothing to count
  int replicate_hot_experts = 0;
  // Live balancing (period_steps > 0) needs the ranks' home placement.
  int world_size = 1;
  PlacementKind placement = PlacementKind::contiguous;
  BalancerConfig rebalance;
};

struct ExpertState {
  ExpertLoad load{0, 0};
  int replicate_hot_experts = 0;
  int world_size = 1;
  std::vector<int32_t> replicated;          // fixed once: replicas on every rank
  std::optional<ReplicaBalancer> balancer;  // live balancing
  static inline const char* name = "hive.expert";
};

expert_actor::behavior_type expert(expert_actor::stateful_pointer<ExpertState> self,
                                   ExpertSetup setup);

}  // namespace hive
