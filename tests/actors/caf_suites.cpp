// Runs the deterministic CAF test suites (caf/test/dsl.hpp) inside GoogleTest,
// one gtest per suite, so every actor test is one ctest binary.
#define CAF_TEST_NO_MAIN
#include <gtest/gtest.h>
#include <caf/test/unit_test_impl.hpp>

namespace {

// Fails when the suite has no tests, so a renamed suite cannot pass silently.
bool run_caf_suite(const std::string& suite) {
  if (caf::test::engine::available_tests(suite).empty()) return false;
  caf::test::engine::max_runtime(0);  // no watchdog: sanitizer builds are slow
  return caf::test::engine::run(false, "", 1, 0, "^" + suite + "$", "", ".*", "");
}

}  // namespace

TEST(CafSuites, StepProtocol) {
  EXPECT_TRUE(run_caf_suite("step_protocol"));
}
TEST(CafSuites, Lifecycle) {
  EXPECT_TRUE(run_caf_suite("lifecycle"));
}
TEST(CafSuites, Faults) {
  EXPECT_TRUE(run_caf_suite("faults"));
}
