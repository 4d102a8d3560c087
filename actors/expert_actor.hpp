#pragma once
// The expert actor: owns the expert placement policy and the per-layer,
// per-expert load statistics (ExpertLoad). The scheduler sends it the load
// delta of every step (tokens routed, and of those the tokens sent to another
// rank; summed over the worker ranks' replies), one way. Once
// the first step with routed tokens is in, it picks the hottest
// `replicate_hot_experts` experts and sends the list back (replicas_atom),
// once; the scheduler hands it to all workers in the same step, so every
// rank switches placement at the same step boundary.
#include <cstdint>
#include <vector>

#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/type_ids.hpp"
#include "moe/expert_load.hpp"

namespace hive {

using expert_actor =
    caf::typed_actor<caf::reacts_to<load_atom, std::vector<int64_t>, std::vector<int64_t>>,
                     caf::replies_to<metrics_atom>::with<ExpertStats>>;

struct ExpertSetup {
  int num_layers = 0;
  int num_experts = 0;  // 0: a dense model, nothing to count
  int replicate_hot_experts = 0;
};

struct ExpertState {
  ExpertLoad load{0, 0};
  int replicate_hot_experts = 0;
  std::vector<int32_t> replicated;  // replicas on every rank, decided once
  static inline const char* name = "hive.expert";
};

expert_actor::behavior_type expert(expert_actor::stateful_pointer<ExpertState> self,
                                   ExpertSetup setup);

}  // namespace hive
