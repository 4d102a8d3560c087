#include "moe/dispatch_plan.hpp"

#include "base/error.hpp"

namespace hive {

DispatchPlan plan_dispatch(std::span<const int32_t> expert_ids, std::span<const float> weights,
                           int top_k, int num_experts) {
  check(expert_ids.size() == weights.size() && top_k > 0 &&
            expert_ids.size() % static_cast<size_t>(top_k) == 0,
        "plan_dispatch: ", expert_ids.size(), " expert ids, ", weights.size(), " weights, top_k ",
        top_k);
  DispatchPlan plan;
  plan.expert_offsets.assign(static_cast<size_t>(num_experts) + 1, 0);
  for (int32_t e : expert_ids) {
    check(e >= 0 && e < num_experts, "plan_dispatch: expert id ", e, " out of range [0, ",
          num_experts, ")");
    ++plan.expert_offsets[static_cast<size_t>(e) + 1];
  }
  for (size_t e = 0; e < static_cast<size_t>(num_experts); ++e)
    plan.expert_offsets[e + 1] += plan.expert_offsets[e];
  std::vector<int64_t> cursor(plan.expert_offsets.begin(), plan.expert_offsets.end() - 1);
  plan.token_index.resize(expert_ids.size());
  plan.weight.resize(expert_ids.size());
  for (size_t a = 0; a < expert_ids.size(); ++a) {
    const auto slot = static_cast<size_t>(cursor[static_cast<size_t>(expert_ids[a])]++);
    plan.token_index[slot] = static_cast<int32_t>(a / static_cast<size_t>(top_k));
    plan.weight[slot] = weights[a];
  }
  return plan;
}

}  // namespace hive
