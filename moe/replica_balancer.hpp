#pragma once
// Live replica balancing: a sliding window of per-step expert load and the
// decision when to re-plan. Every `period_steps` steps it predicts the
// current placement's imbalance (max/mean rank load) from the window; only
// above `threshold` does it re-plan (plan_replicas), and it adopts the plan
// only if the plan is predicted better, so a placement that is good enough
// stays and no weights are copied for nothing. Pure state, no threads: the
// expert actor owns one; the EPLB benchmark drives one directly.
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "moe/expert_placement.hpp"

namespace hive {

struct BalancerConfig {
  int period_steps = 0;  // re-plan check every this many steps; 0: never
  int window_steps = 1;  // steps of load the plan sees
  int slots_per_rank = 0;
  double threshold = 1.0;  // re-plan only when the predicted max/mean exceeds it
};

class ReplicaBalancer {
 public:
  // placement: the homes (and any replicas) the workers start with.
  ReplicaBalancer(ExpertPlacement placement, BalancerConfig config);

  // One step's load per expert ([num_experts], summed over layers). Returns
  // the new replicas (ExpertPlacement::set_replicas' shape) when this step
  // re-planned and changed the placement.
  std::optional<std::vector<std::vector<int32_t>>> add_step(std::span<const int64_t> load);

  const ExpertPlacement& placement() const { return placement_; }
  const std::vector<int64_t>& window_load() const { return window_sum_; }
  // The current placement's predicted max/mean over the window.
  double predicted_imbalance() const;
  int64_t num_replans() const { return num_replans_; }

 private:
  ExpertPlacement placement_;
  BalancerConfig config_;
  std::deque<std::vector<int64_t>> window_;
  std::vector<int64_t> window_sum_;
  int64_t num_steps_ = 0, num_replans_ = 0;
};

}  // namespace hive
