#pragma once
// Dispatch planning: the step's (token, expert) assignments grouped by expert,
// so each expert runs one matmul over a contiguous slice of gathered rows and
// the results are scattered back (combine) with their routing weights.
//
//   expert_ids [n, k] = [[2, 0], [0, 1], [2, 1]]   (token t chose experts)
//   token_index       = [0, 1 | 1, 2 | 0, 2]        grouped by expert 0 | 1 | 2
//   expert_offsets    = [0, 2, 4, 6]                expert e owns [off[e], off[e+1])
#include <cstdint>
#include <span>
#include <vector>

namespace hive {

struct DispatchPlan {
  std::vector<int32_t> token_index;     // the token of each assignment, grouped by expert
  std::vector<float> weight;            // its routing weight
  std::vector<int64_t> expert_offsets;  // [num_experts + 1]

  int64_t count(int expert) const {
    return expert_offsets[static_cast<size_t>(expert) + 1] -
           expert_offsets[static_cast<size_t>(expert)];
  }
};

// expert_ids and weights are [n * top_k], row-major. Within an expert, tokens
// keep ascending order, so the plan is deterministic.
DispatchPlan plan_dispatch(std::span<const int32_t> expert_ids, std::span<const float> weights,
                           int top_k, int num_experts);

}  // namespace hive
