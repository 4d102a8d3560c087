// `hive run --prompts` files of arbitrary bytes: JSON lines, parsed and
// type-checked as the CLI reads them.
#include <sstream>

#include "base/error.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "tools/cli/prompt_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(hive::fuzz::text(data, size));
  try {
    volatile size_t prompts = hive::cli::parse_prompt_lines(in, "prompts.jsonl", hive::cli::kRunPromptKeys).size();
    (void)prompts;
  } catch (const hive::Error&) {
    // A clear error naming the file and line is the expected answer.
  }
  return 0;
}
