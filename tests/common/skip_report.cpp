// Every GoogleTest program links this listener: it prints one line per
// skipped test, its name and its reason, which --gtest_brief=1 (how ctest
// runs them) does not (it prints how many were skipped, not which).
// tools/skipped_tests.py lists these lines at the end of tools/test.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace {

class SkipReport : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    const ::testing::TestResult& result = *info.result();
    if (!result.Skipped()) return;
    std::string reason = "(no reason given)";
    std::string where;
    for (int i = 0; i < result.total_part_count(); ++i) {
      const ::testing::TestPartResult& part = result.GetTestPartResult(i);
      if (!part.skipped()) continue;
      if (*part.message() != '\0') reason = part.message();
      if (part.file_name() != nullptr)
        where = std::string(part.file_name()) + ":" + std::to_string(part.line_number());
    }
    for (char& c : reason)
      if (c == '\n') c = ' ';
    std::printf("[  SKIPPED ] %s.%s: %s%s\n", info.test_suite_name(), info.name(), reason.c_str(),
                where.empty() ? "" : (" (" + where + ")").c_str());
    std::fflush(stdout);
  }
};

// At static initialisation, before main: gtest_main's and the MPI main's
// InitGoogleTest keep appended listeners when --gtest_brief swaps the printer.
struct Registration {
  Registration() { ::testing::UnitTest::GetInstance()->listeners().Append(new SkipReport); }
} const registration;

}  // namespace
