#pragma once
// The optional parallel context of a forward pass: data-parallel attention
// plus expert parallelism. Every rank runs attention over its own sequences
// (its own requests and KV cache); the MoE layers exchange routed tokens by
// all-to-all over `comm` (moe_forward_expert_parallel). Because those
// all-to-alls are collectives, a rank with nothing scheduled in a step still
// runs Model::forward_idle so that its peers' layers can complete.
#include <cstdint>
#include <vector>

#include "moe/expert_placement.hpp"
#include "parallel/communicator.hpp"

namespace hive {

struct ExpertParallelContext {
  Communicator* comm = nullptr;
  const ExpertPlacement* placement = nullptr;
  // Optional, [num_layers][num_experts]: incremented by the number of this
  // rank's tokens routed to each expert of each MoE layer.
  std::vector<std::vector<int64_t>>* expert_load = nullptr;
  // Optional, the same shape: of those, the tokens sent to another rank.
  std::vector<std::vector<int64_t>>* expert_remote = nullptr;
};

}  // namespace hive
