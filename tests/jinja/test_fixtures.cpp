// Whole chat templates against transformers: every conversation in
// <template>/cases.json must render byte for byte as
// tokenizer.apply_chat_template(..., tokenize=False) rendered it, or raise
// where it raised (with the template's own message for raise_exception).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/error.hpp"
#include "runtime/text/chat_template.hpp"
#include "tests/jinja/fixture_data.hpp"

namespace hive {
namespace {

using chat_template::TemplateError;
using chat_template::TemplateRaised;
using testing::kChatTemplateData;
using testing::read_fixture;

class ChatTemplateFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(ChatTemplateFixture, SpecialTokensMatchTransformers) {
  const auto dir = kChatTemplateData / GetParam();
  const auto fixture = read_fixture(dir / "cases.json");
  const auto chat = ChatTemplate::from_tokenizer_config(dir / "tokenizer_config.json");
  // transformers' special_tokens_map as a dict: the same names and strings.
  EXPECT_EQ(nlohmann::json(chat.special_tokens()), nlohmann::json(fixture["special_tokens"]));
}

TEST_P(ChatTemplateFixture, EveryConversationRendersLikeTransformers) {
  const auto dir = kChatTemplateData / GetParam();
  const auto fixture = read_fixture(dir / "cases.json");
  const auto chat = ChatTemplate::from_tokenizer_config(dir / "tokenizer_config.json");
  const auto& cases = fixture["cases"];
  ASSERT_GE(cases.size(), 20u);
  int rendered = 0, raised = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(GetParam() + "/" + c["name"].get<std::string>());
    const auto kwargs = c.value("kwargs", nlohmann::ordered_json::object());
    const bool add_generation_prompt = c["add_generation_prompt"].get<bool>();
    if (c.contains("expected")) {
      EXPECT_EQ(chat.render(c["messages"], add_generation_prompt, kwargs),
                c["expected"].get<std::string>());
      ++rendered;
      continue;
    }
    const std::string type = c["error"]["type"];
    if (type == "TemplateError") {  // raise_exception: the template's own message
      try {
        chat.render(c["messages"], add_generation_prompt, kwargs);
        ADD_FAILURE() << "rendered, but transformers raised: " << c["error"]["message"];
      } catch (const TemplateRaised& error) {
        EXPECT_EQ(error.message(), c["error"]["message"].get<std::string>());
      }
    } else {
      EXPECT_THROW(chat.render(c["messages"], add_generation_prompt, kwargs), TemplateError)
          << "transformers raised " << type << ": " << c["error"]["message"];
    }
    ++raised;
  }
  EXPECT_GT(rendered, 0);
  RecordProperty("rendered", rendered);
  RecordProperty("raised", raised);
}

INSTANTIATE_TEST_SUITE_P(Templates, ChatTemplateFixture,
                         ::testing::Values("qwen3", "llama3_style", "mistral_style"));

TEST(ChatTemplateFixture, JsonTextEntryPointMatchesObjects) {
  const auto dir = kChatTemplateData / "qwen3";
  const auto fixture = read_fixture(dir / "cases.json");
  const auto chat = ChatTemplate::from_tokenizer_config(dir / "tokenizer_config.json");
  const auto& c = fixture["cases"][0];
  EXPECT_EQ(chat.render_json(c["messages"].dump(), c["add_generation_prompt"].get<bool>()),
            c["expected"].get<std::string>());
}

// As in transformers 5, a chat_template.jinja next to tokenizer_config.json
// is the default template even when the config has one of its own.
TEST(ChatTemplateFile, TheJinjaFileTakesPriorityOverTheConfigsTemplate) {
  const auto dir = std::filesystem::temp_directory_path() / "hive_chat_template_priority";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"chat_template": [{"name": "default", "template": "config"},)"
      << R"( {"name": "tool_use", "template": "tools"}]})";
  std::ofstream(dir / "chat_template.jinja") << "file";
  const auto messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
  EXPECT_EQ(
      ChatTemplate::from_tokenizer_config(dir / "tokenizer_config.json").render(messages, false),
      "file");
  EXPECT_EQ(ChatTemplate::from_tokenizer_config(dir / "tokenizer_config.json", "tool_use")
                .render(messages, false),
            "tools");
  std::filesystem::remove(dir / "chat_template.jinja");
  EXPECT_EQ(
      ChatTemplate::from_tokenizer_config(dir / "tokenizer_config.json").render(messages, false),
      "config");
  std::filesystem::remove_all(dir);
}

// tokenizer_config.json and render_json's inputs go through the one JSON
// reader: a key given twice names the source and the key.
TEST(ChatTemplateFile, AKeyGivenTwiceIsAnError) {
  const auto dir = std::filesystem::temp_directory_path() / "hive_chat_template_twice";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"chat_template": "a", "chat_template": "b"})";
  const auto message_of = [](const auto& fn) -> std::string {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(message_of([&] { ChatTemplate::from_tokenizer_config(dir / "tokenizer_config.json"); }),
            (dir / "tokenizer_config.json").string() +
                ": key \"chat_template\" given twice in the object at the top level");
  std::ofstream(dir / "tokenizer_config.json") << R"({"chat_template": "x"})";
  const auto chat = ChatTemplate::from_tokenizer_config(dir / "tokenizer_config.json");
  EXPECT_EQ(message_of([&] { chat.render_json(R"([{"role": "user", "role": "x"}])", false); }),
            "chat template input: the messages: key \"role\" given twice in the object at /0");
  EXPECT_EQ(chat.render_json(R"([{"role": "user", "content": "hi"}])", false), "x");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hive
