#pragma once
// The prompt lines of `hive run --prompts` (the format is described at the
// top of tools/cli/run.cpp): JSON objects, one a line, type- and
// range-checked here; every rule past the JSON types is the input
// processor's.
#include <istream>
#include <string>
#include <vector>

#include "runtime/engine/input_processor.hpp"

namespace hive::cli {

// A prompt line as the input processor takes it, with where it was read.
struct PromptInput {
  RequestInput input;
  std::string where;  // file:line
};

// Reads every line of `in`; blank lines are skipped. Errors are hive::Error
// naming `path` and the line.
std::vector<PromptInput> parse_prompt_lines(std::istream& in, const std::string& path);

}  // namespace hive::cli
