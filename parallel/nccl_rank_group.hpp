#pragma once
// Ranks as processes over NCCL (parallel.transport: nccl): one process per
// GPU, one rank each, started by mpirun (or srun) as for MPI. MPI is only
// the bootstrap: rank 0's ncclGetUniqueId reaches the others by MPI_Bcast,
// and every rank joins with ncclCommInitRank on its own device. The data
// plane is NCCL's alone:
//
//   all_to_all      grouped ncclSend/ncclRecv of bytes, one pair per peer
//   all_reduce_sum  MpiCommunicator's algorithm (mpi_communicator.hpp), so
//                   the bits do not depend on the transport:
//                   1. grouped send/recv: rank c gets chunk c of every rank
//                   2. rank c adds them in rank order on its GPU
//                      (kernels/cuda/rank_order_sum.cuh)
//                   3. grouped send/recv: every summed chunk to every rank
//
// Tensors may live on the device (Device::cuda: NCCL reads and writes them
// in place, as make_nccl_group's communicators do) or on the host (the CPU
// backend's, which is what runs the models today): a host tensor is staged
// through a device buffer the communicator keeps.
//
// No collective waits for ever: the communicator is non-blocking, and every
// call polls ncclCommGetAsyncError and its stream until done or until the
// deadline. A fault (an NCCL or CUDA error, a peer gone, the deadline)
// aborts the communicator (ncclCommAbort) and throws hive::Error naming the
// rank and the cause; the group's abort then ends the job, as the MPI
// group's does. Built with CUDA and MPI.
#include <chrono>
#include <memory>

#include "parallel/rank_group.hpp"

namespace hive {

// The CUDA device of this process's rank: its place on its node
// (OMPI_COMM_WORLD_LOCAL_RANK, else SLURM_LOCALID), else its world rank
// modulo the device count. Throws, naming the rank, when the process sees no
// device or its node has fewer devices than processes.
int nccl_rank_device(int rank);

// The group of every process of the MPI job, as one process's worker sees
// it (make_mpi_rank_group's shape): communicator(rank) only for this
// process's rank, each one a fresh NCCL communicator (a collective: every
// rank makes its own at the same point); abort() ends the job. A collective
// not done within `collective_timeout` is a fault. Needs an MpiSession and
// a CUDA device (nccl_rank_device says which; its error otherwise).
std::shared_ptr<RankGroup> make_nccl_rank_group(std::chrono::milliseconds collective_timeout);

}  // namespace hive
