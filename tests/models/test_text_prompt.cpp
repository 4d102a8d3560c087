// Text prompts in and text out (tools/cli/text_prompt.hpp) on the bundled
// target: the ids transformers makes of a plain and a chat prompt, and the
// greedy continuation as streamed text.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "kernels/backend_select.hpp"
#include "runtime/engine/generate.hpp"
#include "runtime/model/model.hpp"
#include "tools/cli/text_prompt.hpp"

namespace hive {
namespace {

namespace fs = std::filesystem;
const fs::path kTarget = fs::path(HIVE_SOURCE_DIR) / "models" / "hive-moe-target";

nlohmann::json expected() {
  std::ifstream in(fs::path(HIVE_MODELS_DATA) / "expected.json");
  return nlohmann::json::parse(in);
}

TEST(TextPrompt, DefaultModelIsTheBundledTarget) {
  EXPECT_EQ(fs::canonical(cli::default_model_dir()), fs::canonical(kTarget));
  EXPECT_EQ(cli::model_dir_or_default(cli::Args({"--model", "some/dir"}, {"--model"}, {})),
            "some/dir");
  EXPECT_EQ(fs::canonical(cli::model_dir_or_default(cli::Args({}, {"--model"}, {}))),
            fs::canonical(kTarget));
  EXPECT_THROW(cli::model_dir_or_default(cli::Args({"--model", ""}, {"--model"}, {})), hive::Error);
}

TEST(TextPrompt, PlainAndChatPromptsTokenizeAsTransformersDoes) {
  const nlohmann::json want = expected();
  const Tokenizer tokenizer = Tokenizer::from_directory(kTarget.string());
  for (const char* kind : {"plain_prompt", "chat_prompt"}) {
    const bool chat = std::string(kind) == "chat_prompt";
    const std::vector<int32_t> ids =
        cli::encode_prompt(tokenizer, kTarget, want[kind]["text"].get<std::string>(), chat);
    EXPECT_EQ(ids, want[kind]["ids"].get<std::vector<int32_t>>()) << kind;
  }
}

TEST(TextPrompt, GreedyContinuationStreamsTheTextTransformersDecodes) {
  const nlohmann::json want = expected()["plain_prompt"];
  const Tokenizer tokenizer = Tokenizer::from_directory(kTarget.string());
  BackendChoice choice = select_backend(DeviceChoice::cpu, Model::required_ops());
  Model model(kTarget, *choice.backend);
  const std::vector<int32_t> prompt =
      cli::encode_prompt(tokenizer, kTarget, want["text"].get<std::string>(), false);
  GenerateOptions options;
  const auto greedy = want["greedy_ids"].get<std::vector<int32_t>>();
  options.max_tokens = static_cast<int64_t>(greedy.size());
  options.ignore_eos = true;
  cli::TextStream stream(tokenizer, prompt, nullptr);
  const GenerateResult result =
      generate(model, prompt, options, [&](int32_t id) { return stream.write(id); });
  stream.finish();
  EXPECT_EQ(result.tokens, greedy);
  EXPECT_EQ(stream.text(), want["greedy_text"].get<std::string>() + "\n");
}

TEST(TextPrompt, StreamHoldsBackPartialCharactersAndSkipsSpecialTokens) {
  const Tokenizer tokenizer = Tokenizer::from_directory(kTarget.string());
  const std::string text = "caf\xc3\xa9 \xe2\x80\x94 na\xc3\xafve";  // café — naïve
  std::vector<int32_t> ids = tokenizer.encode(text, false);
  ids.push_back(*tokenizer.token_to_id("<|im_end|>"));
  cli::TextStream stream(tokenizer, {}, nullptr);
  for (const int32_t id : ids) {
    stream.write(id);
    // Never a cut character: the text so far is always valid UTF-8.
    EXPECT_EQ(tokenizer.decode(tokenizer.encode(stream.text(), false), false), stream.text());
  }
  stream.finish();
  EXPECT_EQ(stream.text(), text + "\n");
}

}  // namespace
}  // namespace hive
