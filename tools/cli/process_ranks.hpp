#pragma once
// parallel.transport: mpi or nccl — every process of the MPI job runs the same
// command line (mpirun -np N hive serve --config FILE). Rank 0 goes on as
// the command; every other rank serves its worker (actors/worker_ranks.hpp)
// until rank 0's engine ends it, and the command then returns.
#include <memory>

#include "actors/hive_config.hpp"

namespace hive {
class MpiSession;
}

namespace hive::cli {

struct ProcessRanks {
  ProcessRanks();
  ~ProcessRanks();
  ProcessRanks(ProcessRanks&&) noexcept;
  std::unique_ptr<MpiSession> mpi;  // for the life of the command (MPI ends with it)
  bool served_worker = false;       // this process was a worker rank: its work is done
};

// In-process transport: nothing. MPI or NCCL: starts MPI (NCCL: checks
// that this process has its GPU); a rank other than 0 runs its worker here
// and returns with served_worker set.
ProcessRanks start_process_ranks(const HiveConfig& config);

// After a command failed: a process of an MPI job ends the job (its peers
// may be waiting for it), others return.
void end_process_ranks_on_error();

}  // namespace hive::cli
