#pragma once
// The MoE layer with experts spread over the ranks of a group (expert
// parallelism). Each rank brings its own tokens:
//
//   route (local) -> dispatch plan: rows grouped by target rank, then expert
//   -> all-to-all rows + expert ids -> grouped expert FFN on the receiving rank
//   -> all-to-all results back -> combine with routing weights (in expert
//   order, exactly as the single-rank layer adds them)
//
// A rank with no tokens still takes part in both all-to-alls. Results are
// bit-identical to moe_forward on one rank for the same tokens.
#include <vector>

#include "moe/expert_placement.hpp"
#include "moe/ffn.hpp"
#include "parallel/communicator.hpp"

namespace hive {

// weights.experts has one entry per expert (indexed by expert id); those of
// placement.local_experts(comm.rank()) must be valid, the others are never
// read. The router and the shared expert are replicated. expert_load
// (optional, [num_experts]) is incremented by the number of this rank's tokens routed
// to each expert; remote_load (optional, [num_experts]) by the number of
// those that went to another rank (the all-to-all traffic: a replica on this
// rank keeps its expert's tokens here); computed_load (optional, the same
// shape) by the rows this rank's experts computed, wherever they came from.
void moe_forward_expert_parallel(Backend& backend, Communicator& comm,
                                 const ExpertPlacement& placement, const Tensor& x,
                                 const MoeWeights& weights, const RouterConfig& router,
                                 const Tensor& out, std::vector<int64_t>* expert_load = nullptr,
                                 std::vector<int64_t>* remote_load = nullptr,
                                 std::vector<int64_t>* computed_load = nullptr);

}  // namespace hive
