// A rank that fails in the middle of a collective must end the job, never
// leave its peers waiting (ctest runs it under mpirun and reads the output;
// the test's timeout is what a hang would hit):
//   mpi_fault_tests abort   rank 1 aborts its rank group while rank 0 waits
//                           in an all-to-all
//   mpi_fault_tests kill    rank 1 dies by SIGKILL while rank 0 waits
// Every other rank waits in the collective. Reaching the end is the failure.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "parallel/mpi_communicator.hpp"

int main(int argc, char** argv) {
  hive::MpiSession mpi(&argc, &argv);
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "abort" && mode != "kill") {
    std::fprintf(stderr, "usage: mpi_fault_tests abort|kill\n");
    return 2;
  }
  const auto group = hive::make_mpi_rank_group();
  const auto comm = group->communicator(mpi.rank());
  if (mpi.rank() == 1) {
    usleep(200 * 1000);  // let the peers enter the collective first
    std::printf("rank 1: failing (%s)\n", mode.c_str());
    std::fflush(stdout);
    if (mode == "abort") group->abort();
    raise(SIGKILL);
  }
  const int64_t world = comm->world_size();
  std::vector<float> send(static_cast<size_t>(world), 1.0f), recv(static_cast<size_t>(world));
  const std::vector<int64_t> counts(static_cast<size_t>(world), 1);
  comm->all_to_all(hive::Tensor::view(send.data(), hive::DType::f32, {world}), counts,
                   hive::Tensor::view(recv.data(), hive::DType::f32, {world}), counts);
  std::printf("rank %d: the all-to-all returned without rank 1\n", mpi.rank());
  return 0;
}
