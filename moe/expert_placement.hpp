#pragma once
// Which ranks hold which experts. Every expert has a home rank (contiguous
// blocks or round-robin); hot experts may get replicas on other ranks. A
// token is served by a replica on its own rank when there is one; a rank
// without one spreads its tokens for that expert over the holders in turn,
// so each of k holders computes about 1/k of the expert's tokens.
//
//   8 experts, 2 ranks   contiguous:  rank 0: 0 1 2 3   rank 1: 4 5 6 7
//                        round-robin: rank 0: 0 2 4 6   rank 1: 1 3 5 7
#include <cstdint>
#include <string_view>
#include <vector>

namespace hive {

enum class PlacementKind { contiguous, round_robin };

PlacementKind parse_placement_kind(std::string_view name);  // "contiguous" | "round_robin"

class ExpertPlacement {
 public:
  ExpertPlacement(int num_experts, int world_size, PlacementKind kind);

  int num_experts() const { return num_experts_; }
  int world_size() const { return world_size_; }
  int home_rank(int expert) const { return home_[static_cast<size_t>(expert)]; }
  bool holds(int rank, int expert) const;
  // Experts whose weights `rank` needs: its own and its replicas, ascending.
  std::vector<int> local_experts(int rank) const;
  // Ranks holding `expert` (home and replicas), ascending.
  std::vector<int> holders(int expert) const;
  // Where the nth token (in token order, counting from 0) of `source_rank`
  // routed to `expert` in one layer is computed.
  int target_rank(int expert, int source_rank, int64_t nth = 0) const;

  // Adds a copy of `expert` on `rank` (no-op when it already holds one).
  void add_replica(int expert, int rank);
  // Replaces all replicas: replicas[rank] lists the experts `rank` holds
  // besides its home experts (home experts listed there are ignored).
  void set_replicas(const std::vector<std::vector<int32_t>>& replicas);
  // The replicas, in set_replicas' shape (home experts left out, ascending).
  std::vector<std::vector<int32_t>> replicas() const;

 private:
  int num_experts_, world_size_;
  std::vector<int> home_;                 // [expert]
  std::vector<std::vector<bool>> holds_;  // [rank][expert]
};

}  // namespace hive
