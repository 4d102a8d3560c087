#pragma once
// A rank's copies of the experts it holds as replicas (not at home). When the
// placement changes, the weights of each new replica are copied from the
// expert's home rank over the communicator (a memory copy between
// in-process ranks, a device transfer with NCCL), never reloaded from disk;
// a replica the new placement drops is freed.
#include <map>
#include <vector>

#include "kernels/buffer.hpp"
#include "moe/expert_placement.hpp"
#include "moe/ffn.hpp"
#include "parallel/communicator.hpp"

namespace hive {

class ReplicaWeights {
 public:
  // Every rank of the group calls this with the same placements, between
  // MoE steps. weights: this rank's view, one entry per expert; those it
  // holds under `current` are valid, the others carry only dtype and shape
  // (data may be null). Afterwards the entries `next` has on this rank are
  // valid (new replicas point into this object's buffers) and those of
  // dropped replicas are null. Homes must be the same in both placements.
  void switch_placement(Backend& backend, Communicator& comm, const ExpertPlacement& current,
                        const ExpertPlacement& next, MoeWeights& weights);

  size_t num_copies() const { return copies_.size(); }

 private:
  std::map<int, std::vector<Buffer>> copies_;  // expert -> gate, up, down
};

}  // namespace hive
