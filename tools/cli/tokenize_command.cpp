// hive tokenize / hive detokenize: text to ids and back, one JSON value per
// line, for scripts. tokenize reads a JSON string per line and prints a JSON
// array of ids; detokenize reads a JSON array of ids and prints a JSON string.
// Output line k answers input line k: a blank input line gives a blank output
// line, so a script can pair them up.
#include <cstdio>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/json_reader.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/output.hpp"
#include "base/json_writer.hpp"

namespace hive::cli {
namespace {

using Json = nlohmann::json;

Json parse_line(const std::string& line, std::size_t number, const char* expected) {
  try {
    return parse_json<Json>(line);
  } catch (const JsonError& e) {
    fail("stdin line ", number, ": expected ", expected, ": ", e.what());
  }
}

// Runs `convert` on every stdin line and prints its result; a blank line is
// echoed as an empty line. A failed write ends the loop with an error.
template <class Convert>
int for_each_line(Convert&& convert) {
  std::string line;
  std::size_t number = 0;
  while (std::getline(std::cin, line)) {
    ++number;
    const bool blank = line.find_first_not_of(" \t\r") == std::string::npos;
    const std::string out = blank ? std::string() : convert(line, number);
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fputc('\n', stdout);
    check_stdout();  // a full disk ends the loop here, with the reason
  }
  flush_stdout();
  return 0;
}

}  // namespace

int run_tokenize(const std::vector<std::string>& argv) {
  const Args args(argv, {"--tokenizer"}, {"--add-special-tokens"});
  const Tokenizer tokenizer = Tokenizer::from_directory(args.require("--tokenizer"));
  const bool add_special_tokens = args.has("--add-special-tokens");
  return for_each_line([&](const std::string& line, std::size_t number) {
    const Json text = parse_line(line, number, "a JSON string");
    check(text.is_string(), "stdin line ", number, ": expected a JSON string (got ",
          json_text(text).substr(0, 40), ")");
    return json_text(Json(tokenizer.encode(text.get<std::string>(), add_special_tokens)));
  });
}

int run_detokenize(const std::vector<std::string>& argv) {
  const Args args(argv, {"--tokenizer"}, {"--skip-special-tokens"});
  const Tokenizer tokenizer = Tokenizer::from_directory(args.require("--tokenizer"));
  const bool skip_special_tokens = args.has("--skip-special-tokens");
  return for_each_line([&](const std::string& line, std::size_t number) {
    const Json ids = parse_line(line, number, "a JSON array of token ids");
    bool all_ids = ids.is_array();
    for (const Json& id : ids)
      all_ids = all_ids && id.is_number_integer() && id.get<int64_t>() >= 0 &&
                id.get<int64_t>() <= INT32_MAX;
    check(all_ids, "stdin line ", number,
          ": expected a JSON array of token ids (non-negative integers; got ",
          json_text(ids).substr(0, 40), ")");
    return json_text(Json(tokenizer.decode(ids.get<std::vector<int32_t>>(), skip_special_tokens)));
  });
}

}  // namespace hive::cli
