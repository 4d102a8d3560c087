#pragma once
// One rank's NCCL communicator between processes: the data plane of
// make_nccl_rank_group (nccl_rank_group.hpp says what it does and why).
#include <chrono>
#include <memory>

#include "parallel/communicator.hpp"

namespace hive {

// Joins the job's NCCL communicator as `rank` of `world_size` on `device`:
// rank 0's unique id reaches every rank by MPI_Bcast over MPI_COMM_WORLD,
// so every rank calls this at the same point. A collective, or the join,
// not done within `timeout` is a fault (ncclCommAbort, then hive::Error).
std::unique_ptr<Communicator> make_nccl_rank_communicator(int rank, int world_size, int device,
                                                          std::chrono::milliseconds timeout);

}  // namespace hive
