#pragma once
// Ranks as processes (parallel.transport: mpi or nccl). One MPI job of
// world_size processes; rank 0 runs the engine (scheduler, expert actor, gateway) and
// its own worker, every other rank runs only its worker:
//
//   rank 0                                   rank r (1 .. N-1)
//   Engine: connect_worker_ranks   <-MPI--   run_worker_rank: load the model,
//     (gathers "host:port" of each rank)       open a CAF middleman port
//   scheduler actor ---remote_spawn------>   worker actor (its KV cache, its
//     step / result messages (CAF, TCP)         model, its MPI communicator)
//   worker rank 0  <===== MPI collectives (all-to-all, all-reduce) =====>
//                         (or NCCL's between the ranks' GPUs)
//
// The control plane crosses processes as CAF messages once per step (the
// step messages are serialised by their inspect overloads); the data plane
// stays in MPI (or NCCL). A rank that fails ends the job (parallel/mpi_communicator.hpp):
// mpirun reports the cause and every process exits.
#include <functional>
#include <string>

#include <caf/actor_system.hpp>

#include "actors/engine.hpp"
#include "actors/worker_actor.hpp"

namespace hive {

// The group of every process of the job, as this process's worker sees it:
// over MPI or NCCL (config.parallel.transport); a fault in one rank ends the job.
std::shared_ptr<RankGroup> make_process_rank_group(const HiveConfig& config);

// Rank r > 0's whole life: loads its model, serves its worker to rank 0's
// scheduler, and returns when the scheduler ended it (or throws naming what
// went wrong: a model it cannot load, a scheduler that never came).
void run_worker_rank(const HiveConfig& config);

// Rank 0: the ranks' addresses from the MPI job, a connection to each, and
// the function the scheduler starts each rank's worker with (rank 0 here,
// detached; the others in their processes). Every rank of the job must be
// in run_worker_rank.
std::function<worker_actor(const WorkerSpec&)> connect_worker_ranks(caf::actor_system& system,
                                                                    int world_size);

}  // namespace hive
