// Runtime CPU dispatch: the paths parse and print, the supported ones run
// from scalar up to the machine's best, and a path can be switched in process.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "kernels/cpu/cpu_features.hpp"
#include "tests/common/cpu_paths.hpp"

namespace hive::cpu {
namespace {

TEST(CpuFeatures, NamesRoundTrip) {
  for (CpuPath path : {CpuPath::scalar, CpuPath::avx2, CpuPath::avx512, CpuPath::avx512_bf16,
                       CpuPath::amx})
    EXPECT_EQ(parse_cpu_path(cpu_path_name(path)), path);
  EXPECT_FALSE(parse_cpu_path("avx1024").has_value());
}

TEST(CpuFeatures, SupportedPathsRunFromScalarToTheBest) {
  const std::vector<CpuPath> paths = supported_cpu_paths();
  ASSERT_FALSE(paths.empty());
  EXPECT_EQ(paths.front(), CpuPath::scalar);
  EXPECT_EQ(paths.back(), best_cpu_path());
  std::printf("best CPU path here: %s; in use: %s\n",
              std::string(cpu_path_name(best_cpu_path())).c_str(),
              std::string(cpu_kernel_path_name()).c_str());
}

// The detection agrees with the flags Linux lists: a test that skips a path
// the machine lacks (tests/common/cpu_paths.hpp), or a loop that passes over
// the paths above the best, skips only what the machine truly has not.
TEST(CpuFeatures, BestPathIsTheOneProcCpuinfoLists) {
  const std::optional<CpuPath> listed = test::cpuinfo_best_path();
  if (!listed.has_value()) GTEST_SKIP() << "no /proc/cpuinfo to compare with";
  EXPECT_EQ(cpu_path_name(best_cpu_path()), cpu_path_name(*listed));
}

TEST(CpuFeatures, PathsSwitchInProcess) {
  const CpuPath saved = cpu_kernel_path();
  for (CpuPath path : supported_cpu_paths()) {
    set_cpu_kernel_path(path);
    EXPECT_EQ(cpu_kernel_path(), path);
    EXPECT_EQ(cpu_kernel_path_name(), cpu_path_name(path));
  }
  if (best_cpu_path() != CpuPath::amx) {
    EXPECT_THROW(set_cpu_kernel_path(CpuPath::amx), Error);
  }
  set_cpu_kernel_path(saved);
}

}  // namespace
}  // namespace hive::cpu
