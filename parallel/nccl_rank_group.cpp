#include "parallel/nccl_rank_group.hpp"

#include <mpi.h>

#include <cstdlib>

#include "base/error.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "parallel/mpi_communicator.hpp"
#include "parallel/nccl_rank_communicator.hpp"

namespace hive {

namespace {

class NcclRankGroup final : public RankGroup {
 public:
  explicit NcclRankGroup(std::chrono::milliseconds timeout) : timeout_(timeout) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    check(initialized != 0, "make_nccl_rank_group: MPI is not initialised (no MpiSession)");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
    device_ = nccl_rank_device(rank_);
  }
  int world_size() const override { return world_size_; }
  std::unique_ptr<Communicator> communicator(int rank) override {
    check(rank == rank_, "NCCL rank group: this process is rank ", rank_, " of ", world_size_,
          "; rank ", rank, "'s communicator is in its own process");
    return make_nccl_rank_communicator(rank_, world_size_, device_, timeout_);
  }
  void abort() override { mpi_abort("the rank group was aborted: ending every rank of the job"); }

 private:
  std::chrono::milliseconds timeout_;
  int rank_ = 0;
  int world_size_ = 1;
  int device_ = 0;
};

// A process's place on its node, from the launcher: Open MPI's mpirun, or
// Slurm's srun. -1 when neither says.
int local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') continue;
    char* end = nullptr;
    const long local = std::strtol(value, &end, 10);
    check(*end == '\0' && local >= 0, name, " is '", value, "', expected a rank on this node");
    return static_cast<int>(local);
  }
  return -1;
}

}  // namespace

int nccl_rank_device(int rank) {
  const CudaDevices devices = query_cuda_devices();
  check(devices.error.empty(), "parallel.transport nccl: rank ", rank,
        " cannot use its CUDA devices: ", devices.error);
  check(devices.count > 0, "parallel.transport nccl needs a CUDA device per process; rank ", rank,
        " sees none");
  const int local = local_rank();
  if (local < 0) return rank % devices.count;
  check(local < devices.count, "parallel.transport nccl needs a CUDA device per process; rank ",
        rank, " is process ", local + 1, " on its node, which has ", devices.count,
        " CUDA device(s)");
  return local;
}

std::shared_ptr<RankGroup> make_nccl_rank_group(std::chrono::milliseconds collective_timeout) {
  return std::make_shared<NcclRankGroup>(collective_timeout);
}

}  // namespace hive
