#include "moe/replica_weights.hpp"

#include "base/error.hpp"

namespace hive {

namespace {

std::vector<Tensor*> parts(FfnWeights& ffn) {
  return {&ffn.gate, &ffn.up, &ffn.down};
}

}  // namespace

void ReplicaWeights::switch_placement(Backend& backend, Communicator& comm,
                                      const ExpertPlacement& current, const ExpertPlacement& next,
                                      MoeWeights& weights) {
  const int rank = comm.rank();
  check(current.num_experts() == next.num_experts() &&
            weights.experts.size() == static_cast<size_t>(next.num_experts()),
        "replica switch: ", current.num_experts(), " and ", next.num_experts(), " experts, ",
        weights.experts.size(), " weights");
  // Every rank walks the same (expert, rank) order, so each send meets its
  // receive and no two ranks wait on each other.
  for (int e = 0; e < next.num_experts(); ++e) {
    const int home = next.home_rank(e);
    check(home == current.home_rank(e), "replica switch moved expert ", e, "'s home from rank ",
          current.home_rank(e), " to ", home);
    for (int r = 0; r < next.world_size(); ++r) {
      if (!next.holds(r, e) || current.holds(r, e)) continue;
      FfnWeights& ffn = weights.experts[static_cast<size_t>(e)];
      if (rank == home)
        for (Tensor* part : parts(ffn)) comm.send(*part, r);
      if (rank != r) continue;
      std::vector<Buffer> copy;
      for (Tensor* part : parts(ffn)) {
        check(part->is_contiguous(), "replica switch: expert ", e, " weights are not contiguous");
        copy.emplace_back(backend, part->nbytes());
        part->data = copy.back().data();
        comm.recv(*part, home);
      }
      copies_[e] = std::move(copy);
    }
  }
  // Replicas this rank no longer holds: free them.
  for (auto it = copies_.begin(); it != copies_.end();) {
    if (next.holds(rank, it->first)) {
      ++it;
      continue;
    }
    for (Tensor* part : parts(weights.experts[static_cast<size_t>(it->first)]))
      part->data = nullptr;
    it = copies_.erase(it);
  }
}

}  // namespace hive
