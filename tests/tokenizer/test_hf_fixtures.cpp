// Encode, decode and stream every corpus string with the three fixture
// tokenizers (Qwen3, a byte-level BPE, a SentencePiece-style BPE with byte
// fallback) and compare with what Hugging Face produced for the same input.
#include <gtest/gtest.h>

#include "runtime/text/tokenizer/streaming_detokenizer.hpp"
#include "runtime/text/utf8.hpp"
#include "tests/tokenizer/fixtures.hpp"

namespace hive::test {
namespace {

class HfFixture : public ::testing::TestWithParam<std::string> {
 protected:
  const Tokenizer& tokenizer() const { return fixture_tokenizer(GetParam()); }
  Json expected() const { return read_json(kTokenizerData / GetParam() / "expected.json"); }
};

TEST_P(HfFixture, EncodeMatchesWithAndWithoutSpecialTokens) {
  const Json data = expected();
  const Json& strings = corpus()["strings"];
  ASSERT_EQ(strings.size(), data["corpus"].size());
  ASSERT_GE(strings.size(), 200u);
  for (std::size_t i = 0; i < strings.size(); ++i) {
    const std::string text = strings[i].get<std::string>();
    const Json& row = data["corpus"][i];
    EXPECT_EQ(tokenizer().encode(text, false), ids_of(row["ids"]))
        << "string " << i << ": " << quoted(text);
    EXPECT_EQ(tokenizer().encode(text, true), ids_of(row["ids_special"]))
        << "string " << i << " with special tokens: " << quoted(text);
  }
}

TEST_P(HfFixture, EncodeMatchesOnRandomMixes) {
  const Json data = expected();
  const Json& strings = corpus()["random_mixes"];
  ASSERT_EQ(strings.size(), data["random_mixes"].size());
  for (std::size_t i = 0; i < strings.size(); ++i) {
    const std::string text = strings[i].get<std::string>();
    const Json& row = data["random_mixes"][i];
    EXPECT_EQ(tokenizer().encode(text, false), ids_of(row["ids"])) << i << ": " << quoted(text);
    EXPECT_EQ(tokenizer().encode(text, true), ids_of(row["ids_special"]))
        << i << ": " << quoted(text);
  }
}

TEST_P(HfFixture, InvalidUtf8IsReplacedLikeLossyDecoding) {
  const Json data = expected();
  const Json& inputs = corpus()["invalid_utf8_hex"];
  ASSERT_EQ(inputs.size(), data["invalid_utf8"].size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string bytes = from_hex(inputs[i].get<std::string>());
    ASSERT_FALSE(utf8::is_valid(bytes));
    const Json& row = data["invalid_utf8"][i];
    EXPECT_EQ(tokenizer().encode(bytes, false), ids_of(row["ids"])) << "bytes " << inputs[i];
    EXPECT_EQ(tokenizer().encode(bytes, true), ids_of(row["ids_special"])) << "bytes " << inputs[i];
  }
}

TEST_P(HfFixture, DecodeMatchesBothWays) {
  const Json data = expected();
  auto check_rows = [&](const Json& rows, const char* what) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Json& row = rows[i];
      const auto ids = ids_of(row.contains("ids_special") ? row["ids_special"] : row["ids"]);
      EXPECT_EQ(tokenizer().decode(ids, false), row["decode"].get<std::string>())
          << what << " " << i;
      EXPECT_EQ(tokenizer().decode(ids, true), row["decode_skip"].get<std::string>())
          << what << " " << i << " skipping special tokens";
    }
  };
  check_rows(data["corpus"], "corpus string");
  check_rows(data["random_decode"], "random ids");
}

// Feeds ids one at a time; checks each chunk against Hugging Face's
// DecodeStream where it has one, and that chunks + finish() == decode() --
// unless the ids hold invalid byte-fallback UTF-8, which can rewrite text
// already streamed (Hugging Face's own chunks differ from decode() there too).
void check_stream(const Tokenizer& tokenizer, const std::vector<int32_t>& ids, bool skip,
                  const Json& reference, const std::string& what) {
  StreamingDetokenizer stream(tokenizer, skip);
  std::string joined;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const std::string chunk = stream.step(ids[k]);
    EXPECT_TRUE(utf8::is_valid(chunk)) << what << " step " << k;
    if (reference.is_array()) {
      const std::string want = reference[k].is_null() ? "" : reference[k].get<std::string>();
      EXPECT_EQ(chunk, want) << what << " step " << k;
    }
    joined += chunk;
  }
  joined += stream.finish();
  const std::string decoded = tokenizer.decode(ids, skip);
  if (decoded.find("\xEF\xBF\xBD") == std::string::npos) {
    EXPECT_EQ(joined, decoded) << what;
  }
}

TEST_P(HfFixture, StreamingMatchesDecodeStream) {
  const Json data = expected();
  for (std::size_t i = 0; i < data["corpus"].size(); ++i) {
    const Json& row = data["corpus"][i];
    const auto ids = ids_of(row["ids_special"]);
    check_stream(tokenizer(), ids, false, row["stream"], "string " + std::to_string(i));
    check_stream(tokenizer(), ids, true, row["stream_skip"],
                 "string " + std::to_string(i) + " skipping special tokens");
  }
  for (std::size_t i = 0; i < data["random_decode"].size(); ++i) {
    const Json& row = data["random_decode"][i];
    check_stream(tokenizer(), ids_of(row["ids"]), false, row["stream"],
                 "random ids " + std::to_string(i));
  }
}

TEST_P(HfFixture, SpecialTokenIdsAndVocabulary) {
  const Json info = expected()["info"];
  auto optional_id = [](const Json& value) {
    return value.is_null() ? std::nullopt : std::optional<int32_t>(value.get<int32_t>());
  };
  EXPECT_EQ(tokenizer().bos_token_id(), optional_id(info["bos_token_id"]));
  EXPECT_EQ(tokenizer().eos_token_id(), optional_id(info["eos_token_id"]));
  EXPECT_EQ(tokenizer().vocab_size(), info["vocab_size"].get<std::size_t>());
  for (int32_t id = 0; id < static_cast<int32_t>(tokenizer().vocab_size()); id += 97) {
    const auto token = tokenizer().id_to_token(id);
    ASSERT_TRUE(token.has_value()) << id;
    EXPECT_EQ(tokenizer().token_to_id(*token), id) << *token;
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, HfFixture,
                         ::testing::Values("qwen3", "bytelevel_bpe", "sentencepiece_bpe"));

}  // namespace
}  // namespace hive::test
