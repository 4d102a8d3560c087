// test-backend-ops, as llama.cpp's: every case of the table
// (backend_op_cases.cpp) on every backend compiled in (the CPU backend on
// each kernel path this machine runs, in the matmul mode the run started in,
// as ctest runs the program once in each; CUDA when a device is there)
// against the CPU reference in the exact mode. Random inputs from a printed
// seed (HIVE_TEST_SEED replays it), outputs poisoned and guarded, NaN/Inf
// where the reference has none fails, then NMSE under the case's tolerance.
// An op a backend lacks is reported and skipped; an Op without a case in the
// table fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/ops.hpp"
#ifdef HIVE_HAVE_CUDA
#include "kernels/cuda/cuda_backend.hpp"
#endif
#include "tests/common/random.hpp"
#include "tests/kernels/op_harness.hpp"

namespace hive {
namespace {

// The oracle: the CPU backend with the reference loops where the CPU backend
// has a faster kernel of its own.
class ReferenceBackend : public CpuBackend {
 public:
  std::string_view name() const override { return "cpu reference"; }
  void matmul(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& out) override {
    cpu::matmul_reference(x, w, bias, out);
  }
  void matmul_group(std::span<const MatmulProblem> problems) override {
    Backend::matmul_group(problems);  // one reference matmul after another
  }
  void paged_attention(const PagedAttentionParams& params) override {
    cpu::paged_attention_reference(params);
  }
};

struct BackendUnderTest {
  std::string name;
  std::function<std::unique_ptr<Backend>()> make;
  std::optional<cpu::CpuPath> cpu_path;  // switched to while the backend runs
  // The bf16 matmul (cpu_features.hpp) runs while the backend does: its
  // matmul rounds activations to bf16, and its paged attention over a bf16
  // cache rounds q and the softmax weights, so they get that rounding's
  // tolerance. Only in the bf16 mode on a path with vdpbf16ps: below it the
  // bf16 mode is the f32 matmul, held to the exact tolerance.
  bool bf16_matmul = false;
  double max_nmse(const test::OpCase& c) const {
    const bool rounds =
        c.op == Op::matmul || c.op == Op::matmul_group || c.op == Op::paged_attention;
    return bf16_matmul && rounds ? std::max(c.max_nmse, kBf16ActivationsNmse) : c.max_nmse;
  }
  // A value rounded to bf16 is off by up to 2^-9 relative: an NMSE of a few
  // 1e-6 (attention's measured 2e-6 to 4e-6).
  static constexpr double kBf16ActivationsNmse = test::kBf16RoundingNmse;
};

#ifdef HIVE_HAVE_CUDA
bool has_cuda_device() {
  return cuda_device_count() > 0;
}
#else
bool has_cuda_device() {
  return false;
}
#endif

// The CPU backend on every path, in the matmul mode this run was started in
// (tests/CMakeLists.txt runs the harness once in each).
std::vector<BackendUnderTest> backends_under_test(cpu::MatmulPrecision precision) {
  std::vector<BackendUnderTest> backends;
  const bool bf16_mode = precision == cpu::MatmulPrecision::bf16;
  for (cpu::CpuPath path : cpu::supported_cpu_paths())
    backends.push_back(
        {"cpu/" + std::string(cpu::cpu_path_name(path)) + (bf16_mode ? " bf16 mode" : ""),
         [] { return std::make_unique<CpuBackend>(); }, path,
         bf16_mode && path >= cpu::CpuPath::avx512_bf16});
#ifdef HIVE_HAVE_CUDA
  if (has_cuda_device())
    backends.push_back({"cuda", [] { return std::make_unique<CudaBackend>(0); }, std::nullopt});
#endif
  if (!has_cuda_device()) std::printf("cuda: no device on this machine, skipped\n");
  return backends;
}

::testing::AssertionResult agree(const std::vector<float>& got, const std::vector<float>& expected,
                                 double max_nmse) {
  if (got.size() != expected.size())
    return ::testing::AssertionFailure()
           << got.size() << " output values, the reference has " << expected.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (std::isnan(got[i]) != std::isnan(expected[i]) ||
        std::isinf(got[i]) != std::isinf(expected[i]))
      return ::testing::AssertionFailure()
             << "value " << i << " is " << got[i] << ", the reference's " << expected[i];
  const double error = test::nmse(got.data(), expected.data(), got.size());
  if (!(error <= max_nmse))
    return ::testing::AssertionFailure() << "NMSE " << error << " above " << max_nmse;
  return ::testing::AssertionSuccess();
}

TEST(BackendOps, EveryCaseOnEveryBackend) {
  const uint64_t seed = test::test_seed();
  std::printf("seed %llu (HIVE_TEST_SEED=%llu replays this run)\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  const std::vector<test::OpCase> cases = test::backend_op_cases();
  const cpu::CpuPath initial_path = cpu::cpu_kernel_path();
  const cpu::MatmulPrecision initial_precision = cpu::matmul_precision();
  std::printf("matmul precision %s\n",
              std::string(cpu::matmul_precision_name(initial_precision)).c_str());
  ReferenceBackend reference;
  for (const BackendUnderTest& under_test : backends_under_test(initial_precision)) {
    const std::unique_ptr<Backend> backend = under_test.make();
    int passed = 0, skipped = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      const test::OpCase& c = cases[i];
      SCOPED_TRACE(testing::Message() << under_test.name << " " << op_name(c.op) << " " << c.params
                                      << " seed " << seed);
      if (!backend->supports(c.op)) {
        ++skipped;
        continue;
      }
      const uint64_t case_seed = seed + i;
      cpu::set_cpu_kernel_path(cpu::CpuPath::scalar);
      cpu::set_matmul_precision(cpu::MatmulPrecision::f32);
      test::OpRun expected_run(reference, case_seed);
      c.run(expected_run);
      const std::vector<float> expected = expected_run.results();
      if (under_test.cpu_path) cpu::set_cpu_kernel_path(*under_test.cpu_path);
      cpu::set_matmul_precision(initial_precision);
      test::OpRun run(*backend, case_seed);
      c.run(run);
      const std::vector<float> got = run.results();
      const double max_nmse = under_test.max_nmse(c);
      const bool ok = agree(got, expected, max_nmse);
      EXPECT_TRUE(ok) << agree(got, expected, max_nmse).message();
      passed += ok && expected_run.intact() && run.intact();
    }
    std::printf("%s: %d of %zu cases passed, %d skipped (op not supported)\n",
                under_test.name.c_str(), passed, cases.size(), skipped);
  }
  cpu::set_cpu_kernel_path(initial_path);
  cpu::set_matmul_precision(initial_precision);
}

// The harness is only as good as its table: an op added to the Backend
// without a case here would go untested on every backend.
TEST(BackendOps, EveryOpHasACase) {
  std::set<Op> covered;
  for (const test::OpCase& c : test::backend_op_cases()) covered.insert(c.op);
  for (int i = 0; i < static_cast<int>(Op::count); ++i)
    EXPECT_TRUE(covered.count(static_cast<Op>(i)))
        << "Op::" << op_name(static_cast<Op>(i)) << " has no case in backend_op_cases.cpp";
}

#ifdef HIVE_HAVE_CUDA
// A KV budget's memory fraction is a share of this: the device's memory.
TEST(BackendOps, MemoryIsTheDevicesOwn) {
  if (!has_cuda_device()) GTEST_SKIP() << "no CUDA device";
  CudaBackend backend(0);
  EXPECT_GT(backend.memory_bytes(), int64_t{1} << 30);
  EXPECT_LT(backend.memory_bytes(), int64_t{1} << 42);
}
#endif

}  // namespace
}  // namespace hive

// A CUDA device that is there but cannot be used fails the run rather than
// passing on the CPU paths alone.
int main(int argc, char** argv) {
#ifdef HIVE_HAVE_CUDA
  if (const hive::CudaDevices devices = hive::query_cuda_devices(); !devices.error.empty()) {
    std::printf("CUDA devices are present but unusable: %s\n", devices.error.c_str());
    return 1;
  }
#endif
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
