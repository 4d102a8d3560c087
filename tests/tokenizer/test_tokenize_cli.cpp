// `hive tokenize` and `hive detokenize` as scripts run them: JSON lines in,
// JSON lines out, the same ids as Hugging Face, errors with a line number.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/common/run_command.hpp"
#include "tests/tokenizer/fixtures.hpp"

namespace hive::test {
namespace {

using Result = CommandResult;

// Runs hive with `input` on stdin; stdout only unless with_stderr.
Result run(const std::string& args, const std::string& input, bool with_stderr = false) {
  const auto input_path = std::filesystem::temp_directory_path() /
                          ("hive_tokenize_" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(input_path, std::ios::binary) << input;
  const Result result =
      run_command(hive_binary() + " " + args + " < " + input_path.string(), with_stderr);
  std::filesystem::remove(input_path);
  return result;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    out.push_back(text.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// The small byte-level fixture: each run loads the tokenizer anew.
const std::string kTokenizerFlag = "--tokenizer " + (kTokenizerData / "bytelevel_bpe").string();

TEST(TokenizeCli, PrintsHuggingFaceIdsPerLine) {
  const Json expected = read_json(kTokenizerData / "bytelevel_bpe" / "expected.json");
  const Json& strings = corpus()["strings"];
  std::string input;
  std::vector<std::size_t> picked = {0, 1, 50, 100, 150, 200, 250};
  for (const std::size_t i : picked) input += strings[i].dump() + "\n";
  for (const bool special : {false, true}) {
    const Result result =
        run(std::string("tokenize ") + kTokenizerFlag + (special ? " --add-special-tokens" : ""),
            input);
    ASSERT_EQ(result.status, 0) << result.out;
    const auto out = lines(result.out);
    ASSERT_EQ(out.size(), picked.size());
    for (std::size_t k = 0; k < picked.size(); ++k)
      EXPECT_EQ(Json::parse(out[k]), expected["corpus"][picked[k]][special ? "ids_special" : "ids"])
          << "line " << k;
  }
}

TEST(TokenizeCli, DetokenizeInvertsTokenize) {
  const std::string input =
      "\"Hello, world!\"\n\"<|begin_of_text|>user\\n\\u4f60\\u597d<|eot_id|>\"\n";
  const Result ids = run("tokenize " + kTokenizerFlag, input);
  ASSERT_EQ(ids.status, 0);
  const Result text = run("detokenize " + kTokenizerFlag, ids.out);
  ASSERT_EQ(text.status, 0);
  const auto out = lines(text.out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(Json::parse(out[0]), "Hello, world!");
  EXPECT_EQ(Json::parse(out[1]), "<|begin_of_text|>user\n\xE4\xBD\xA0\xE5\xA5\xBD<|eot_id|>");
  const Result skipped = run("detokenize --skip-special-tokens " + kTokenizerFlag, ids.out);
  EXPECT_EQ(Json::parse(lines(skipped.out)[1]), "user\n\xE4\xBD\xA0\xE5\xA5\xBD");
}

TEST(TokenizeCli, BadLinesFailWithTheLineNumber) {
  const Result not_json = run("tokenize " + kTokenizerFlag, "\"ok\"\nnot json\n", true);
  EXPECT_EQ(not_json.status, 1);
  EXPECT_NE(not_json.out.find("stdin line 2: expected a JSON string"), std::string::npos)
      << not_json.out;
  const Result not_ids = run("detokenize " + kTokenizerFlag, "[1, \"x\"]\n", true);
  EXPECT_EQ(not_ids.status, 1);
  EXPECT_NE(not_ids.out.find("stdin line 1: expected a JSON array of token ids"), std::string::npos)
      << not_ids.out;
  // Ids that are not token ids: they used to wrap (4294967297 read as 1).
  for (const char* line : {"[4294967297]\n", "[-1]\n"}) {
    const Result bad = run("detokenize " + kTokenizerFlag, line, true);
    EXPECT_EQ(bad.status, 1) << line;
    EXPECT_NE(bad.out.find("stdin line 1: expected a JSON array of token ids"), std::string::npos)
        << bad.out;
  }
  const Result no_dir = run("tokenize --tokenizer /nonexistent", "", true);
  EXPECT_EQ(no_dir.status, 1);
  EXPECT_NE(no_dir.out.find("tokenizer.json: not found"), std::string::npos) << no_dir.out;
}

// Output line k answers input line k: a blank line in gives a blank line out
// (it used to be skipped, shifting every later answer up a line).
TEST(TokenizeCli, BlankLinesKeepTheOutputAligned) {
  const Result ids = run("tokenize " + kTokenizerFlag, "\"a\"\n\n  \n\"b\"\n");
  ASSERT_EQ(ids.status, 0) << ids.out;
  const auto out = lines(ids.out);
  ASSERT_EQ(out.size(), 4u) << ids.out;
  EXPECT_EQ(out[1], "");
  EXPECT_EQ(out[2], "");
  EXPECT_EQ(out[3], lines(run("tokenize " + kTokenizerFlag, "\"b\"\n").out).at(0));
  const Result text = run("detokenize " + kTokenizerFlag, ids.out);
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_EQ(text.out, "\"a\"\n\n\n\"b\"\n");
}

// Output that cannot be written (a full disk) is an error, not exit 0.
TEST(TokenizeCli, AFailedWriteIsAnError) {
  const auto input = std::filesystem::temp_directory_path() / "hive_tokenize_full.jsonl";
  std::ofstream(input) << "\"Hello, world!\"\n";
  // stderr to the pipe first, then stdout to the full device.
  const Result full = run_command("(" + hive_binary() + " tokenize " + kTokenizerFlag + " < " +
                                      input.string() + " 2>&1 >/dev/full)",
                                  false);
  std::filesystem::remove(input);
  EXPECT_EQ(full.status, 1) << full.out;
  EXPECT_NE(full.out.find(
                "hive tokenize: error: cannot write the output to stdout: No space left on device"),
            std::string::npos)
      << full.out;
}

}  // namespace
}  // namespace hive::test
