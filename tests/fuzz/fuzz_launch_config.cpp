// A launch file (`hive serve --config x.yaml`) of arbitrary bytes, parsed and
// checked as the CLI does before it starts anything.
#include "actors/launch_config.hpp"
#include "base/error.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const hive::fuzz::ScratchDir dir;
  try {
    const hive::LaunchConfig config =
        hive::parse_launch_config(hive::fuzz::text(data, size), "fuzz.yaml", dir.path());
    volatile int expert_parallel = hive::check_parallel_layout(config.parallel, "fuzz.yaml");
    (void)expert_parallel;
  } catch (const hive::Error&) {
    // A clear error naming the file, line and key is the expected answer.
  }
  return 0;
}
