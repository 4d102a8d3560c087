#include "moe/expert_placement.hpp"

#include "base/error.hpp"

namespace hive {

PlacementKind parse_placement_kind(std::string_view name) {
  if (name == "contiguous") return PlacementKind::contiguous;
  if (name == "round_robin") return PlacementKind::round_robin;
  fail("expert placement must be contiguous or round_robin (got '", name, "')");
}

ExpertPlacement::ExpertPlacement(int num_experts, int world_size, PlacementKind kind)
    : num_experts_(num_experts), world_size_(world_size) {
  check(num_experts >= 1 && world_size >= 1, "expert placement needs experts and ranks (got ",
        num_experts, " experts, ", world_size, " ranks)");
  check(world_size <= num_experts, "expert parallelism over ", world_size, " ranks needs at least ",
        world_size, " experts (got ", num_experts, ")");
  // Contiguous blocks as even as can be: the first num_experts % world_size
  // ranks hold one expert more than the others (5 on 4: 2 1 1 1).
  const int base = num_experts / world_size, extra = num_experts % world_size;
  const auto contiguous_rank = [&](int e) {
    const int in_larger = extra * (base + 1);
    return e < in_larger ? e / (base + 1) : extra + (e - in_larger) / base;
  };
  holds_.assign(static_cast<size_t>(world_size),
                std::vector<bool>(static_cast<size_t>(num_experts)));
  for (int e = 0; e < num_experts; ++e) {
    const int rank = kind == PlacementKind::contiguous ? contiguous_rank(e) : e % world_size;
    home_.push_back(rank);
    holds_[static_cast<size_t>(rank)][static_cast<size_t>(e)] = true;
  }
}

bool ExpertPlacement::holds(int rank, int expert) const {
  return holds_[static_cast<size_t>(rank)][static_cast<size_t>(expert)];
}

std::vector<int> ExpertPlacement::local_experts(int rank) const {
  std::vector<int> experts;
  for (int e = 0; e < num_experts_; ++e)
    if (holds(rank, e)) experts.push_back(e);
  return experts;
}

std::vector<int> ExpertPlacement::holders(int expert) const {
  std::vector<int> ranks;
  for (int r = 0; r < world_size_; ++r)
    if (holds(r, expert)) ranks.push_back(r);
  return ranks;
}

int ExpertPlacement::target_rank(int expert, int source_rank, int64_t nth) const {
  check(expert >= 0 && expert < num_experts_, "expert ", expert, " out of range [0, ", num_experts_,
        ")");
  if (holds(source_rank, expert)) return source_rank;
  const std::vector<int> ranks = holders(expert);
  if (ranks.size() == 1) return ranks[0];
  // Offset by the source rank, so that ranks with few tokens do not all
  // start at the same holder.
  const auto k = static_cast<int64_t>(ranks.size());
  return ranks[static_cast<size_t>((nth + source_rank) % k)];
}

void ExpertPlacement::add_replica(int expert, int rank) {
  check(expert >= 0 && expert < num_experts_ && rank >= 0 && rank < world_size_,
        "replica of expert ", expert, " on rank ", rank, " is out of range");
  holds_[static_cast<size_t>(rank)][static_cast<size_t>(expert)] = true;
}

void ExpertPlacement::set_replicas(const std::vector<std::vector<int32_t>>& replicas) {
  check(replicas.size() == static_cast<size_t>(world_size_), "replicas for ", replicas.size(),
        " ranks, the placement has ", world_size_);
  for (int r = 0; r < world_size_; ++r)
    for (int e = 0; e < num_experts_; ++e)
      holds_[static_cast<size_t>(r)][static_cast<size_t>(e)] = home_rank(e) == r;
  for (int r = 0; r < world_size_; ++r)
    for (const int32_t e : replicas[static_cast<size_t>(r)]) add_replica(e, r);
}

std::vector<std::vector<int32_t>> ExpertPlacement::replicas() const {
  std::vector<std::vector<int32_t>> list(static_cast<size_t>(world_size_));
  for (int r = 0; r < world_size_; ++r)
    for (int e = 0; e < num_experts_; ++e)
      if (holds(r, e) && home_rank(e) != r) list[static_cast<size_t>(r)].push_back(e);
  return list;
}

}  // namespace hive
