#pragma once
// Collectives between ranks that are processes, over MPI (Debian's Open MPI:
// shared memory between processes of one node, TCP between nodes). One rank
// per process; the communicator spans MPI_COMM_WORLD. Host tensors only: a
// GPU rank uses NCCL (nccl_communicator.hpp).
//
// The results are those of InProcessGroup bit for bit: all_to_all moves
// bytes, and all_reduce_sum adds in rank order on every transport:
//
//   data (n floats) split into world_size chunks, chunk c owned by rank c
//   1. all-to-all:  rank c receives chunk c of every rank's data
//   2. rank c sums its chunk as 0 + rank 0 + rank 1 + ... (fixed order)
//   3. all-gather:  every rank receives every summed chunk
//
// That moves 2 (W-1)/W n floats per rank, as a ring all-reduce does, but the
// sum order does not depend on the transport, the node layout or the size.
#include <memory>
#include <string>
#include <vector>

#include "parallel/communicator.hpp"
#include "parallel/rank_group.hpp"

namespace hive {

// MPI for the life of the process: initialises it (MPI_THREAD_MULTIPLE, as
// a worker's collectives run on its actor's thread) unless something else
// already has, and finalises what it initialised — unless an exception is
// leaving its scope: MPI_Finalize waits for the other processes, which may
// wait for this one, so the failure ends the job instead (the caller's
// handler prints it, then calls mpi_abort_if_running). MPI can be
// initialised only once per process: keep one for the whole program.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }

 private:
  bool finalize_ = false;
  int rank_ = 0;
  int world_size_ = 1;
};

// A communicator over a duplicate of MPI_COMM_WORLD (its own context, so its
// messages never match another library's). Needs an MpiSession. Errors
// are hive::Error naming the call and MPI's text.
std::unique_ptr<Communicator> make_mpi_communicator();

// The group of every process of the job, as one process's worker sees it:
// communicator(rank) only for this process's own rank (the others live in
// their processes); abort() ends the job, since a process cannot release
// a peer that waits in a collective of another process. Open MPI's mpirun
// also ends the job when a process dies (a crash, SIGKILL), so no rank is
// left waiting either way.
std::shared_ptr<RankGroup> make_mpi_rank_group();

// Bootstrap: every rank's string, at rank 0 (in rank order); the others
// get an empty vector. Collective over MPI_COMM_WORLD.
std::vector<std::string> mpi_gather_strings(const std::string& mine);

// mpi_abort, if this process is part of a job that has not ended.
void mpi_abort_if_running();

// Ends every process of the job (MPI_Abort): a rank that cannot go on while
// its peers wait in a collective. Prints `cause` first.
[[noreturn]] void mpi_abort(const char* cause);

}  // namespace hive
