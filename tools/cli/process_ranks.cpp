#include "tools/cli/process_ranks.hpp"

#include "actors/engine.hpp"
#include "base/error.hpp"
#ifdef HIVE_HAVE_MPI
#include "actors/worker_ranks.hpp"
#include "parallel/mpi_communicator.hpp"
#ifdef HIVE_HAVE_CUDA
#include "parallel/nccl_rank_group.hpp"
#endif
#endif

namespace hive::cli {

ProcessRanks::ProcessRanks() = default;
ProcessRanks::~ProcessRanks() = default;
ProcessRanks::ProcessRanks(ProcessRanks&&) noexcept = default;

ProcessRanks start_process_ranks(const HiveConfig& config) {
  ProcessRanks ranks;
  const RankTransport transport = config.parallel.transport;
  if (transport == RankTransport::in_process) return ranks;
#ifdef HIVE_HAVE_MPI
  ranks.mpi = std::make_unique<MpiSession>(nullptr, nullptr);
#ifdef HIVE_HAVE_CUDA
  // Every rank checks for its GPU before anything else: a machine without
  // one is an error at start, not at the first collective.
  if (transport == RankTransport::nccl) nccl_rank_device(ranks.mpi->rank());
#endif
  check(ranks.mpi->world_size() == config.parallel.world_size, "parallel.world_size is ",
        config.parallel.world_size, " but the MPI job has ", ranks.mpi->world_size(),
        " processes: start it with mpirun -np ", config.parallel.world_size, " (or srun -n ",
        config.parallel.world_size, ")");
  if (ranks.mpi->rank() != 0) {
    try {
      run_worker_rank(config);
    } catch (const Error& e) {
      fail("rank ", ranks.mpi->rank(), ": ", e.what());
    }
    ranks.served_worker = true;
  }
#else
  fail("parallel.transport ", transport == RankTransport::mpi ? "mpi" : "nccl",
       ": this Hive was built without MPI (-DHIVE_MPI=OFF)");
#endif
  return ranks;
}

void end_process_ranks_on_error() {
#ifdef HIVE_HAVE_MPI
  mpi_abort_if_running();
#endif
}

}  // namespace hive::cli
