#include "moe/replica_balancer.hpp"

#include "base/error.hpp"
#include "moe/replica_planner.hpp"

namespace hive {

ReplicaBalancer::ReplicaBalancer(ExpertPlacement placement, BalancerConfig config)
    : placement_(std::move(placement)),
      config_(config),
      window_sum_(static_cast<size_t>(placement_.num_experts()), 0) {
  check(config.period_steps >= 0 && config.window_steps >= 1 && config.slots_per_rank >= 0 &&
            config.threshold >= 1.0,
        "replica balancing needs period >= 0, window >= 1, slots >= 0 and threshold >= 1 (got ",
        config.period_steps, ", ", config.window_steps, ", ", config.slots_per_rank, ", ",
        config.threshold, ")");
}

double ReplicaBalancer::predicted_imbalance() const {
  return max_over_mean(predicted_rank_load(window_sum_, placement_));
}

std::optional<std::vector<std::vector<int32_t>>> ReplicaBalancer::add_step(
    std::span<const int64_t> load) {
  check(load.size() == window_sum_.size(), "step load of ", load.size(), " experts, expected ",
        window_sum_.size());
  window_.emplace_back(load.begin(), load.end());
  for (size_t e = 0; e < load.size(); ++e) window_sum_[e] += load[e];
  if (window_.size() > static_cast<size_t>(config_.window_steps)) {
    for (size_t e = 0; e < load.size(); ++e) window_sum_[e] -= window_.front()[e];
    window_.pop_front();
  }
  ++num_steps_;
  if (config_.period_steps == 0 || num_steps_ % config_.period_steps != 0) return std::nullopt;
  const double current = predicted_imbalance();
  if (current <= config_.threshold) return std::nullopt;
  ExpertPlacement planned = placement_;
  planned.set_replicas(plan_replicas(window_sum_, placement_, config_.slots_per_rank));
  if (max_over_mean(predicted_rank_load(window_sum_, planned)) >= current) return std::nullopt;
  placement_ = std::move(planned);
  ++num_replans_;
  return placement_.replicas();
}

}  // namespace hive
