#pragma once
// Replica planning, EPLB-style: given each expert's load over a recent
// window, choose which ranks hold extra copies (replicas) of which experts so
// that the ranks' loads come out even. Homes never move, so every expert
// keeps at least one holder and a new replica's weights can always be copied
// from its home.
//
// The load model matches ExpertPlacement::target_rank: an expert's tokens
// split evenly over its holders, so a rank's load is the sum of
// load[e] / holders(e) over the experts it holds.
//
//   load 8 1 1 1 1 1 1 2, 4 ranks contiguous (0 1 | 2 3 | 4 5 | 6 7), 1 slot:
//   homes only: rank loads 9 2 2 3 -> max/mean 2.25
//   expert 0 on ranks 1, 2, 3 too:  3 4 4 5 -> max/mean 1.25
//   and expert 7 on rank 0:         4 4 4 4 -> max/mean 1 (plan_replicas)
#include <cstdint>
#include <span>
#include <vector>

#include "moe/expert_placement.hpp"

namespace hive {

// Each rank's load under `placement`, in the units of expert_load
// ([num_experts], summed over layers).
std::vector<double> predicted_rank_load(std::span<const int64_t> expert_load,
                                        const ExpertPlacement& placement);

// max / mean of the loads; 0 when they are all 0 (nothing to balance).
double max_over_mean(std::span<const double> loads);

// The replicas (ExpertPlacement::set_replicas' shape) for `expert_load` on
// `placement`'s homes (its current replicas are ignored), at most
// slots_per_rank per rank. Greedy: add, one at a time, the replica (expert,
// rank with a free slot) that lowers the most loaded rank most (of equals,
// the one leaving the loads most even: least sum of squares), until none
// improves. Deterministic: ties go to the lower expert id, then lower rank.
std::vector<std::vector<int32_t>> plan_replicas(std::span<const int64_t> expert_load,
                                                const ExpertPlacement& placement,
                                                int slots_per_rank);

}  // namespace hive
