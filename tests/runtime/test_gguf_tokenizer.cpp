// The tokenizer and chat template a GGUF file carries (tokenizer.ggml.*,
// tokenizer.chat_template; tests/data/gguf/models/tokenizer.gguf is the
// bundled model's, written by tools/make_gguf_models.py) behave exactly as
// the Hugging Face files they came from: the same ids for every string, the
// same text back, the same special tokens, the same chat rendering.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/engine/model_text.hpp"
#include "runtime/model/gguf_tokenizer.hpp"

namespace hive {
namespace {

namespace fs = std::filesystem;

const fs::path kDirectory = fs::path(HIVE_SOURCE_DIR) / "models" / "hive-moe-target";
const fs::path kGguf = fs::path(HIVE_TEST_DATA) / "gguf" / "models" / "tokenizer.gguf";

const std::vector<std::string> kTexts = {
    "",
    "Hello, world!",
    " leading space and  double  spaces",
    "line one\nline two\r\n\ttabbed",
    "numbers 1234567 and 3.14159",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    "text<|endoftext|>more text",
    "ünïcödé, 日本語のテキスト, emoji 🐝🍯, Ελληνικά",
    "don't won't it's I'll we've",
    "\xff\xfe invalid bytes",
};

TEST(GgufTokenizer, EncodesAndDecodesAsTheDirectorysTokenizer) {
  const Tokenizer expected = load_tokenizer(kDirectory);
  const Tokenizer got = load_tokenizer(kGguf);
  EXPECT_EQ(got.vocab_size(), expected.vocab_size());
  EXPECT_EQ(got.bos_token_id(), expected.bos_token_id());
  EXPECT_EQ(got.eos_token_id(), expected.eos_token_id());
  for (int32_t id = 0; id < static_cast<int32_t>(expected.vocab_size()); ++id) {
    ASSERT_EQ(got.id_to_token(id), expected.id_to_token(id)) << id;
    ASSERT_EQ(got.is_special(id), expected.is_special(id)) << id;
  }
  for (const std::string& text : kTexts) {
    for (const bool special : {false, true}) {
      const std::vector<int32_t> ids = expected.encode(text, special);
      EXPECT_EQ(got.encode(text, special), ids) << text;
      EXPECT_EQ(got.decode(ids, special), expected.decode(ids, special)) << text;
    }
  }
}

TEST(GgufTokenizer, ChatTemplateRendersAsTheDirectorys) {
  ASSERT_TRUE(has_chat_template(kGguf));
  const ChatTemplate expected = load_chat_template(kDirectory);
  const ChatTemplate got = load_chat_template(kGguf);
  const nlohmann::ordered_json messages = {{{"role", "system"}, {"content", "Be brief."}},
                                           {{"role", "user"}, {"content", "Héllo 🐝"}},
                                           {{"role", "assistant"}, {"content", "Hi."}},
                                           {{"role", "user"}, {"content", "Again?"}}};
  for (const bool open : {false, true})
    EXPECT_EQ(got.render(messages, open), expected.render(messages, open));
  EXPECT_EQ(chat_template_source(kGguf),
            kGguf.string() + ": metadata key 'tokenizer.chat_template'");
}

}  // namespace
}  // namespace hive
