// The progress line: what it writes on a terminal, and that it writes
// nothing at all elsewhere (a pipe, a log file).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tools/cli/progress.hpp"

namespace hive::cli {
namespace {

// What `use` writes through a Progress into a temporary file.
template <class Use>
std::string written(bool is_terminal, int64_t total, Use&& use) {
  std::FILE* file = std::tmpfile();
  {
    Progress progress(file, is_terminal, "eval-ppl", total, "windows");
    use(progress);
  }
  std::string out(static_cast<size_t>(std::ftell(file)), '\0');
  std::rewind(file);
  out.resize(std::fread(out.data(), 1, out.size(), file));
  std::fclose(file);
  return out;
}

TEST(Progress, RedrawsInPlaceOnATerminalWhenThePercentageChanges) {
  const std::string out = written(true, 4, [](Progress& p) {
    p.update(1);
    p.update(1);  // the same percentage: not drawn again
    p.update(9);  // clamped to the total
  });
  EXPECT_EQ(out,
            "\reval-ppl: 0/4 windows (0%)"
            "\reval-ppl: 1/4 windows (25%)"
            "\reval-ppl: 4/4 windows (100%)"
            "\r\x1b[K");  // erased when it goes
}

TEST(Progress, ClearErasesAndTheNextUpdateRedraws) {
  const std::string out = written(true, 2, [](Progress& p) {
    p.update(1);
    p.clear();
    p.update(1);
    p.done();
    p.update(2);  // after done(): nothing
    p.done();
  });
  EXPECT_EQ(out,
            "\reval-ppl: 0/2 windows (0%)"
            "\reval-ppl: 1/2 windows (50%)\r\x1b[K"
            "\reval-ppl: 1/2 windows (50%)\r\x1b[K");
}

TEST(Progress, UnknownTotalShowsTheLabelUntilDone) {
  EXPECT_EQ(written(true, 0, [](Progress& p) { p.update(5); }), "\reval-ppl...\r\x1b[K");
}

TEST(Progress, WritesNothingWhenNotATerminal) {
  for (const int64_t total : {0, 3})
    EXPECT_EQ(written(false, total,
                      [](Progress& p) {
                        p.update(1);
                        p.clear();
                        p.update(3);
                        p.done();
                      }),
              "");
}

}  // namespace
}  // namespace hive::cli
