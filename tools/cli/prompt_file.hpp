#pragma once
// The prompts file that hive run and hive agree read (--prompts): JSON lines,
// one prompt each, {"prompt": "text"} or {"prompt_ids": [1, 2, 3]} plus
// optional keys (run.cpp lists them). One meaning for both commands: a JSON
// line can hold any prompt (a newline, leading spaces, ids, a chat turn),
// which a plain text line cannot. Blank lines are skipped; an unknown key, a
// key the command does not apply, a value of the wrong type or range, or a
// repeated id is an error naming the file and line.
#include <istream>
#include <string>
#include <vector>

#include "runtime/engine/input_processor.hpp"

namespace hive::cli {

// A command's name and the keys its prompt lines may hold.
struct PromptKeys {
  const char* command;
  std::vector<std::string> names;
};

// Every key: hive run takes them all.
extern const PromptKeys kRunPromptKeys;

// A prompt line as the input processor takes it, with where it was read.
struct PromptInput {
  RequestInput input;
  std::string where;  // file:line
};

// The prompts of `path`, at least one; every rule past the JSON types is the
// input processor's.
std::vector<PromptInput> read_prompt_file(const std::string& path, const PromptKeys& keys);
// The same from a stream; errors name `path` and the line.
std::vector<PromptInput> parse_prompt_lines(std::istream& in, const std::string& path,
                                            const PromptKeys& keys);

}  // namespace hive::cli
