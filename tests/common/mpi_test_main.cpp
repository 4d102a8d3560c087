// main() of the tests whose ranks are processes (mpirun -np N test ...):
// MPI for the whole run, one seed for every rank (rank 0's, or
// HIVE_TEST_SEED), and one verdict: the run fails if any rank failed. A rank
// that throws outside a test's assertions ends the job (mpi_abort), so its
// peers never wait in a collective for ever.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <exception>
#include <random>
#include <string>

#include "parallel/mpi_communicator.hpp"

int main(int argc, char** argv) {
  hive::MpiSession mpi(&argc, &argv);
  const char* fixed = std::getenv("HIVE_TEST_SEED");
  unsigned long long seed = fixed != nullptr && *fixed != '\0' ? std::stoull(fixed)
                                                               : std::random_device{}();
  MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  setenv("HIVE_TEST_SEED", std::to_string(seed).c_str(), 1);
  if (mpi.rank() == 0)
    std::printf("%d ranks, HIVE_TEST_SEED=%llu\n", mpi.world_size(), seed);
  ::testing::InitGoogleTest(&argc, argv);
  int failed = 0;
  try {
    failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  } catch (const std::exception& e) {
    hive::mpi_abort(e.what());
  }
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (mpi.rank() == 0)
    std::printf("%s on %d ranks\n", failed ? "FAILED" : "passed", mpi.world_size());
  return failed;
}
