// hive eval-ppl and hive agree on the bundled models, against the numbers
// transformers gives on the same text and prompts (tools/eval_models.py).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

namespace hive {
namespace {

namespace fs = std::filesystem;
const fs::path kModels = fs::path(HIVE_SOURCE_DIR) / "models";
const fs::path kData = HIVE_MODELS_DATA;
const std::string kHive = std::string(HIVE_BINARY_DIR) + "/bin/hive";

struct Result {
  int status = -1;
  std::string out;  // stdout and stderr together
};

Result run(const std::string& args, const std::string& env = "") {
  Result r;
  FILE* pipe = ::popen((env + " " + kHive + " " + args + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    r.out.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

nlohmann::json expected() {
  std::ifstream in(kData / "expected.json");
  return nlohmann::json::parse(in);
}

// The number after `label` in the output, or NaN.
double number_after(const std::string& out, const std::string& label) {
  const std::regex pattern(label + R"(\s*([0-9.eE+-]+))");
  std::smatch match;
  if (!std::regex_search(out, match, pattern)) return std::nan("");
  return std::stod(match[1]);
}

TEST(BundledModels, EvalPplMatchesTransformersWithinATenthOfAPercent) {
  const nlohmann::json want = expected();
  for (const char* name : {"hive-moe-target", "hive-draft"}) {
    const Result r = run("eval-ppl --model " + (kModels / name).string() + " --text " +
                         (kData / "heldout_sample.txt").string() + " --device cpu");
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(number_after(r.out, "tokens:"), want["heldout_sample_tokens"].get<double>()) << r.out;
    const double perplexity = number_after(r.out, "perplexity:");
    const double reference = want["perplexity"][name].get<double>();
    EXPECT_NEAR(perplexity / reference, 1.0, 1e-3)
        << name << ": hive " << perplexity << ", transformers " << reference;
  }
}

TEST(BundledModels, TheDraftIsWorseThanTheTargetButFarBetterThanChance) {
  const nlohmann::json want = expected();
  const double target = want["perplexity"]["hive-moe-target"].get<double>();
  const double draft = want["perplexity"]["hive-draft"].get<double>();
  EXPECT_LT(target, draft);
  EXPECT_LT(draft, 4096.0 / 10);  // a uniform guess over the vocabulary scores 4096
}

TEST(BundledModels, EvalPplDefaultsToTheBundledTarget) {
  const std::string text = " --text " + (kData / "heldout_sample.txt").string() + " --device cpu";
  const Result bundled = run("eval-ppl" + text);
  ASSERT_EQ(bundled.status, 0) << bundled.out;
  EXPECT_NE(bundled.out.find("models/hive-moe-target"), std::string::npos) << bundled.out;
  const Result from_env = run("eval-ppl" + text, "HIVE_MODEL=" + (kModels / "hive-draft").string());
  ASSERT_EQ(from_env.status, 0) << from_env.out;
  EXPECT_NE(from_env.out.find("models/hive-draft"), std::string::npos) << from_env.out;
  const Result missing = run("eval-ppl" + text, "HIVE_MODEL=/nonexistent");
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.out.find("/nonexistent has no config.json"), std::string::npos) << missing.out;
}

TEST(BundledModels, AgreeMatchesTransformers) {
  const nlohmann::json want = expected()["agreement"];
  const Result r =
      run("agree --target " + (kModels / "hive-moe-target").string() + " --draft " +
          (kModels / "hive-draft").string() + " --prompts " + (kData / "prompts.txt").string() +
          " --max-tokens " + std::to_string(want["max_tokens"].get<int>()) + " --device cpu");
  ASSERT_EQ(r.status, 0) << r.out;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(r.out, match, std::regex(R"(\((\d+) of (\d+) positions)")))
      << r.out;
  EXPECT_EQ(std::stoi(match[2]), want["positions"].get<int>()) << r.out;
  // One position may flip where two logits nearly tie.
  EXPECT_NEAR(std::stoi(match[1]), want["agreed"].get<int>(), 1) << r.out;
}

TEST(BundledModels, AgreeOfAModelWithItselfIsOne) {
  const std::string target = (kModels / "hive-draft").string();
  const Result r = run("agree --target " + target + " --draft " + target + " --prompts " +
                       (kData / "prompts.txt").string() + " --max-tokens 8 --device cpu");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(number_after(r.out, "agreement:"), 1.0) << r.out;
}

TEST(BundledModels, BadInputsNameWhatWasWrong) {
  const std::string target = " --target " + (kModels / "hive-moe-target").string();
  Result r = run("agree" + target + " --draft " + (kModels / "hive-draft").string() +
                 " --prompts /nonexistent.txt --device cpu");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("--prompts: cannot open '/nonexistent.txt'"), std::string::npos) << r.out;
  r = run("eval-ppl --text " + (kData / "prompts.txt").string() + " --window 1 --device cpu");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("--window must be between 2"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace hive
