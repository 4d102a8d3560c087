#pragma once
// The ranks of one parallel group as its workers see it: each rank's
// communicator, and an abort that no rank outlives waiting in a collective.
// Threads of this process (InProcessGroup: abort releases the waiting ranks
// with an error) or processes (MPI or NCCL: abort ends the job). The
// scheduler makes one per worker generation through a factory, never naming
// the type.
#include <functional>
#include <memory>

#include "parallel/communicator.hpp"

namespace hive {

class RankGroup {
 public:
  virtual ~RankGroup() = default;
  virtual int world_size() const = 0;
  // The communicator of `rank`; its collectives run on that rank's thread.
  virtual std::unique_ptr<Communicator> communicator(int rank) = 0;
  // A failed rank calls it so its peers do not wait for ever; the group
  // cannot be used again.
  virtual void abort() = 0;
};

// What carries a group's collectives: threads of one process, or processes
// (one rank per process, launched by mpirun or srun) over MPI, or over NCCL
// between their GPUs (one GPU per process; MPI only bootstraps it).
enum class RankTransport { in_process, mpi, nccl };

// Makes the group of one worker generation of `world_size` ranks.
using RankGroupFactory = std::function<std::shared_ptr<RankGroup>(int world_size)>;

}  // namespace hive
