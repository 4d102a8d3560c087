#include "moe/replica_planner.hpp"

#include <algorithm>
#include <numeric>

#include "base/error.hpp"

namespace hive {

namespace {

double share(std::span<const int64_t> expert_load, const ExpertPlacement& placement, int expert) {
  return static_cast<double>(expert_load[static_cast<size_t>(expert)]) /
         static_cast<double>(placement.holders(expert).size());
}

// The placement's score: its most loaded rank first, then the sum of
// squares, so that of two placements with the same maximum (several ranks
// tied at it) the more even one wins.
struct Score {
  double max = 0, sum_of_squares = 0;
  bool better_than(const Score& other) const {
    // Relative slack: float noise must not count as progress.
    const auto less = [](double a, double b) { return a < b - 1e-9 * (1.0 + b); };
    if (less(max, other.max)) return true;
    if (less(other.max, max)) return false;
    return less(sum_of_squares, other.sum_of_squares);
  }
};

Score score(const std::vector<double>& loads) {
  Score s;
  for (const double l : loads) {
    s.max = std::max(s.max, l);
    s.sum_of_squares += l * l;
  }
  return s;
}

// Adds the one replica that improves the score most; false when none does.
bool place_one(std::span<const int64_t> expert_load, ExpertPlacement& placement,
               std::vector<int>& free_slots) {
  const std::vector<double> loads = predicted_rank_load(expert_load, placement);
  Score best = score(loads);
  int best_expert = -1, best_rank = -1;
  for (int e = 0; e < placement.num_experts(); ++e) {
    const auto load = static_cast<double>(expert_load[static_cast<size_t>(e)]);
    if (load == 0) continue;
    const std::vector<int> holders = placement.holders(e);
    const auto count = static_cast<double>(holders.size());
    for (int r = 0; r < placement.world_size(); ++r) {
      if (free_slots[static_cast<size_t>(r)] == 0 || placement.holds(r, e)) continue;
      // The holders' shares shrink from load / count to load / (count + 1).
      std::vector<double> after = loads;
      for (const int h : holders)
        after[static_cast<size_t>(h)] -= load / count - load / (count + 1);
      after[static_cast<size_t>(r)] += load / (count + 1);
      const Score s = score(after);
      if (!s.better_than(best)) continue;
      best = s;
      best_expert = e;
      best_rank = r;
    }
  }
  if (best_expert < 0) return false;
  placement.add_replica(best_expert, best_rank);
  --free_slots[static_cast<size_t>(best_rank)];
  return true;
}

// EPLB's two phases: first the number of copies (each spare slot to the
// expert with the largest share), then the copies, largest share first, each
// to the least loaded rank with a free slot that does not hold it yet.
void place_by_counts(std::span<const int64_t> expert_load, ExpertPlacement& placement,
                     std::vector<int>& free_slots) {
  const int world = placement.world_size(), experts = placement.num_experts();
  std::vector<int> copies(static_cast<size_t>(experts), 1);
  const auto share_of = [&](int e) {
    return static_cast<double>(expert_load[static_cast<size_t>(e)]) /
           copies[static_cast<size_t>(e)];
  };
  int spare = 0;
  for (const int slots : free_slots) spare += slots;
  for (; spare > 0; --spare) {
    int pick = -1;
    for (int e = 0; e < experts; ++e)
      if (copies[static_cast<size_t>(e)] < world && expert_load[static_cast<size_t>(e)] > 0 &&
          (pick < 0 || share_of(e) > share_of(pick)))
        pick = e;
    if (pick < 0) break;
    ++copies[static_cast<size_t>(pick)];
  }
  std::vector<double> loads(static_cast<size_t>(world), 0.0);
  std::vector<int> extra;  // one entry per copy beyond the home
  for (int e = 0; e < experts; ++e) {
    loads[static_cast<size_t>(placement.home_rank(e))] += share_of(e);
    extra.insert(extra.end(), static_cast<size_t>(copies[static_cast<size_t>(e)] - 1), e);
  }
  std::stable_sort(extra.begin(), extra.end(),
                   [&](int a, int b) { return share_of(a) > share_of(b); });
  for (const int e : extra) {
    int target = -1;
    for (int r = 0; r < world; ++r)
      if (free_slots[static_cast<size_t>(r)] > 0 && !placement.holds(r, e) &&
          (target < 0 || loads[static_cast<size_t>(r)] < loads[static_cast<size_t>(target)]))
        target = r;
    if (target < 0) continue;  // every rank with room holds it already
    placement.add_replica(e, target);
    --free_slots[static_cast<size_t>(target)];
    loads[static_cast<size_t>(target)] += share_of(e);
  }
}

}  // namespace

std::vector<double> predicted_rank_load(std::span<const int64_t> expert_load,
                                        const ExpertPlacement& placement) {
  check(expert_load.size() == static_cast<size_t>(placement.num_experts()), "load of ",
        expert_load.size(), " experts for a placement of ", placement.num_experts());
  std::vector<double> loads(static_cast<size_t>(placement.world_size()), 0.0);
  for (int e = 0; e < placement.num_experts(); ++e) {
    const double part = share(expert_load, placement, e);
    for (const int r : placement.holders(e)) loads[static_cast<size_t>(r)] += part;
  }
  return loads;
}

double max_over_mean(std::span<const double> loads) {
  const double sum = std::accumulate(loads.begin(), loads.end(), 0.0);
  if (loads.empty() || sum <= 0.0) return 0.0;
  return *std::max_element(loads.begin(), loads.end()) * static_cast<double>(loads.size()) / sum;
}

std::vector<std::vector<int32_t>> plan_replicas(std::span<const int64_t> expert_load,
                                                const ExpertPlacement& placement,
                                                int slots_per_rank) {
  check(slots_per_rank >= 0, "replica slots per rank must be >= 0 (got ", slots_per_rank, ")");
  for (const int64_t load : expert_load)
    check(load >= 0, "expert load must be >= 0 (got ", load, ")");
  // Two plans from the homes alone; the better one is kept. The greedy one
  // stops when no single copy helps (a local optimum when two hot experts
  // share a home); the counted one packs well but ignores that a copy a
  // rank could not take is wasted. Each catches the other's bad cases.
  ExpertPlacement homes = placement;
  homes.set_replicas(std::vector<std::vector<int32_t>>(static_cast<size_t>(homes.world_size())));
  const std::vector<int> slots(static_cast<size_t>(homes.world_size()), slots_per_rank);
  ExpertPlacement greedy = homes, counted = homes;
  std::vector<int> greedy_slots = slots, counted_slots = slots;
  while (place_one(expert_load, greedy, greedy_slots)) {
  }
  place_by_counts(expert_load, counted, counted_slots);
  // Whatever slots the counted plan left, the greedy step may still use well.
  while (place_one(expert_load, counted, counted_slots)) {
  }
  const Score greedy_score = score(predicted_rank_load(expert_load, greedy));
  const Score counted_score = score(predicted_rank_load(expert_load, counted));
  return counted_score.better_than(greedy_score) ? counted.replicas() : greedy.replicas();
}

}  // namespace hive
