// A launch file (`hive serve --config x.yaml`) of arbitrary bytes, parsed and
// checked as the CLI does before it starts anything.
#include "actors/hive_config.hpp"
#include "base/error.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const hive::fuzz::ScratchDir dir;
  try {
    const hive::HiveConfig config =
        hive::parse_hive_config(hive::fuzz::text(data, size), "fuzz.yaml", dir.path());
    // What parses prints as a launch file that parses again.
    hive::parse_hive_config(hive::print_config(config), "printed.yaml", dir.path());
  } catch (const hive::Error&) {
    // A clear error naming the file, line and key is the expected answer.
  }
  return 0;
}
