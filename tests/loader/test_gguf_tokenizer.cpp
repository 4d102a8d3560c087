// The tokenizer and chat template a GGUF file carries (tokenizer.ggml.*,
// tokenizer.chat_template; tests/data/gguf/models/tokenizer.gguf is the
// bundled model's, written by tools/make_gguf_models.py) behave exactly as
// the Hugging Face files they came from: the same ids for every string, the
// same text back, the same special tokens, the same chat rendering.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "runtime/engine/model_text.hpp"
#include "runtime/loader/gguf_tokenizer.hpp"

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

// SentencePiece ("llama", merges recovered from the scores or listed) and
// byte-level BPE with llama.cpp's "llama-bpe", "qwen2", "tekken" and
// "gpt-4o" pre-tokenizers,
// written from the tokenizer fixtures by tools/make_gguf_tokenizers.py:
// every corpus string and random mix encodes to transformers' ids for the
// same file (AutoTokenizer.from_pretrained(dir, gguf_file=...)), with and
// without special tokens, and decodes to its text.
class GgufTokenizerFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufTokenizerFixture, EncodesAsTransformersReadsTheFile) {
  const fs::path dir = fs::path(HIVE_TEST_DATA) / "gguf" / "tokenizers";
  static const nlohmann::json expected = [&] {
    std::ifstream in(dir / "expected.json");
    return nlohmann::json::parse(in);
  }();
  const nlohmann::json& texts = expected.at("texts");
  const nlohmann::json& want = expected.at(GetParam());
  const Tokenizer got = load_tokenizer(dir / GetParam());
  int mismatches = 0;
  for (size_t i = 0; i < texts.size() && mismatches < 10; ++i) {
    const std::string text = texts[i].get<std::string>();
    const auto ids = want.at("ids")[i].get<std::vector<int32_t>>();
    const auto ids_special = want.at("ids_special")[i].get<std::vector<int32_t>>();
    const std::vector<int32_t> plain = got.encode(text, false), special = got.encode(text, true);
    EXPECT_EQ(plain, ids) << i << ": " << text;
    EXPECT_EQ(special, ids_special) << i << ": " << text;
    EXPECT_EQ(got.decode(ids_special, false), want.at("decoded")[i].get<std::string>())
        << i << ": " << text;
    mismatches += (plain != ids) + (special != ids_special);
  }
}

INSTANTIATE_TEST_SUITE_P(Files, GgufTokenizerFixture,
                         ::testing::Values("sentencepiece.gguf", "sentencepiece_merges.gguf",
                                           "llama_bpe.gguf", "qwen2_bpe.gguf", "tekken_bpe.gguf",
                                           "gpt4o_bpe.gguf"),
                         [](const auto& file) {
                           return file.param.substr(0, file.param.find('.'));
                         });

// A pre-tokenizer Hive has no split pattern for is refused by name.
TEST(GgufTokenizer, AnUnknownPreTokenizerIsRefusedByName) {
  const fs::path dir = fs::path(HIVE_TEST_DATA) / "gguf" / "tokenizers";
  std::ifstream in(dir / "llama_bpe.gguf", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // "llama-bpe" -> "deepseek3" (same length: the file stays valid).
  const size_t at = bytes.find("llama-bpe");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 9, "deepseek3");
  const fs::path path = fs::temp_directory_path() / "hive_gguf_pre_deepseek3.gguf";
  std::ofstream(path, std::ios::binary) << bytes;
  try {
    load_tokenizer(path);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.pre 'deepseek3' is not supported "
                                         "(supported: default, gpt-2, llama3,"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace hive
