// The streaming detokenizer on hand-picked cases: characters split over
// byte tokens are held back, SentencePiece spaces stay where they belong,
// and the chunks always add up to decode().
#include <gtest/gtest.h>

#include <algorithm>
#include <span>

#include "runtime/text/tokenizer/streaming_detokenizer.hpp"
#include "runtime/text/utf8.hpp"
#include "tests/tokenizer/fixtures.hpp"

namespace hive::test {
namespace {

std::vector<std::string> chunks(const Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
  StreamingDetokenizer stream(tokenizer, false);
  std::vector<std::string> out;
  for (const int32_t id : ids) out.push_back(stream.step(id));
  out.push_back(stream.finish());
  return out;
}

TEST(StreamingDetokenizer, HoldsPartialCharactersOfByteFallbackTokens) {
  const Tokenizer& tokenizer = fixture_tokenizer("sentencepiece_bpe");
  const auto ids = tokenizer.encode("Hello \xE4\xBD\xA0 world", false);  // "你" is 3 byte tokens
  const auto out = chunks(tokenizer, ids);
  std::string joined;
  int empty = 0;
  for (const std::string& chunk : out) {
    EXPECT_TRUE(utf8::is_valid(chunk));
    EXPECT_EQ(chunk.find("\xEF\xBF\xBD"), std::string::npos) << "no replacement character";
    empty += chunk.empty();
    joined += chunk;
  }
  EXPECT_EQ(joined, "Hello \xE4\xBD\xA0 world");
  EXPECT_GE(empty, 2);                         // the first two byte tokens (and finish) add nothing
  EXPECT_FALSE(out.front().starts_with(" "));  // the first token's marker is not a space
}

// A stream primed with the prompt decodes its first token as it reads after
// the prompt: SentencePiece drops the leading space of a window's first
// token, which glued the first generated word onto the prompt.
TEST(StreamingDetokenizer, APrimedStreamKeepsTheFirstWordsSpace) {
  const Tokenizer& tokenizer = fixture_tokenizer("sentencepiece_bpe");
  const std::vector<int32_t> prompt = tokenizer.encode("Once upon a time", false);
  const std::vector<int32_t> all = tokenizer.encode("Once upon a time there was", false);
  ASSERT_TRUE(std::equal(prompt.begin(), prompt.end(), all.begin()));
  const auto continue_after = [&](std::span<const int32_t> context) {
    StreamingDetokenizer stream(tokenizer, false);
    stream.prime(context);
    std::string text;
    for (size_t i = prompt.size(); i < all.size(); ++i) text += stream.step(all[i]);
    return text + stream.finish();
  };
  EXPECT_EQ(continue_after(prompt), " there was");
  EXPECT_EQ(continue_after({}), "there was");  // without the prompt, as before
}

// Primed with any prefix of a corpus string, the stream gives the text the
// rest adds: decode(all) minus decode(prefix). Where the prefix ends inside
// a character, it gives the end of decode(all) from a character boundary
// (the whole character and what follows).
TEST(StreamingDetokenizer, APrimedStreamContinuesAtEverySplitPoint) {
  const std::string replacement = "\xEF\xBF\xBD";
  for (const char* name : {"sentencepiece_bpe", "qwen3", "bytelevel_bpe"}) {
    const Tokenizer& tokenizer = fixture_tokenizer(name);
    for (const bool skip : {false, true}) {
      int exact = 0, inside = 0;
      for (const auto& entry : corpus()["strings"]) {
        std::vector<int32_t> ids = tokenizer.encode(entry.get<std::string>(), false);
        ids.resize(std::min<size_t>(ids.size(), 40));  // every split costs whole decodes
        const std::string all = tokenizer.decode(ids, skip);
        for (size_t k = 1; k < ids.size(); ++k) {
          const std::vector<int32_t> prompt(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(k));
          StreamingDetokenizer stream(tokenizer, skip);
          stream.prime(prompt);
          std::string text;
          for (size_t i = k; i < ids.size(); ++i) text += stream.step(ids[i]);
          text += stream.finish();
          const std::string before = tokenizer.decode(prompt, skip);
          SCOPED_TRACE(testing::Message() << name << " skip " << skip << " split " << k << ": "
                                          << quoted(entry.get<std::string>()));
          if (all.starts_with(before) && !before.ends_with(replacement)) {
            ASSERT_EQ(before + text, all);
            ++exact;
          } else if (before.ends_with(replacement) && all.find(replacement) == std::string::npos) {
            ASSERT_TRUE(all.ends_with(text)) << quoted(text);
            ASSERT_TRUE(utf8::is_valid(text)) << quoted(text);
            ++inside;
          }
        }
      }
      EXPECT_GT(exact, 1000) << name;
      if (std::string(name) != "qwen3") {
        EXPECT_GT(inside, 10) << name;
      }
    }
  }
}

TEST(StreamingDetokenizer, FinishFlushesAnUnfinishedCharacter) {
  const Tokenizer& tokenizer = fixture_tokenizer("qwen3");
  const auto ids = tokenizer.encode("\xF0\xA0\x80\x80", false);  // U+20000
  ASSERT_GT(ids.size(), 1u);  // one character, several byte-level tokens
  StreamingDetokenizer stream(tokenizer, false);
  EXPECT_EQ(stream.step(ids[0]), "");
  EXPECT_EQ(stream.finish(), "\xEF\xBF\xBD");
  EXPECT_EQ(tokenizer.decode(std::vector<int32_t>{ids[0]}, false), "\xEF\xBF\xBD");
}

// The model writing U+FFFD itself: held back (it could be half a
// character) only until more tokens came than one character can span, so
// the stream keeps flowing. Before, nothing came out until finish().
TEST(StreamingDetokenizer, EmitsGenuineReplacementCharacters) {
  for (const char* name : {"qwen3", "sentencepiece_bpe"}) {
    SCOPED_TRACE(name);
    const Tokenizer& tokenizer = fixture_tokenizer(name);
    const std::vector<int32_t> one = tokenizer.encode("\xEF\xBF\xBD", false);
    std::vector<int32_t> ids;
    for (int i = 0; i < 40; ++i) ids.insert(ids.end(), one.begin(), one.end());
    const std::vector<std::string> out = chunks(tokenizer, ids);
    std::string joined;
    size_t chunks_before_finish = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      joined += out[i];
      chunks_before_finish += i + 1 < out.size() && !out[i].empty();
    }
    EXPECT_EQ(joined, tokenizer.decode(ids, false));
    EXPECT_GE(chunks_before_finish, 40 * one.size() / 5 - 1);
  }
}

// Skipped special tokens add no byte: they must not count towards the hold
// on a partial character (five of them used to release half of "你" as
// U+FFFD, and the completed character was then dropped).
TEST(StreamingDetokenizer, SkippedSpecialTokensDoNotReleaseAPartialCharacter) {
  const Tokenizer& tokenizer = fixture_tokenizer("sentencepiece_bpe");
  std::vector<int32_t> ids = tokenizer.encode("Hi", false);
  for (int i = 0; i < 4; ++i) ids.push_back(*tokenizer.token_to_id(i % 2 ? "[INST]" : "</s>"));
  for (const char* byte : {"<0xE4>", "<0xBD>", "<0xA0>"})
    ids.push_back(*tokenizer.token_to_id(byte));
  StreamingDetokenizer stream(tokenizer, true);
  std::string joined;
  for (const int32_t id : ids) {
    const std::string chunk = stream.step(id);
    EXPECT_EQ(chunk.find("\xEF\xBF\xBD"), std::string::npos) << "a partial character came out";
    joined += chunk;
  }
  joined += stream.finish();
  EXPECT_EQ(joined, tokenizer.decode(ids, true));
  EXPECT_EQ(joined, "Hi\xE4\xBD\xA0");
}

// A lone lead byte followed by many skipped special tokens: the held
// character is given up (as U+FFFD) once the window holds 32 tokens, rather
// than held while the window grows with every token.
TEST(StreamingDetokenizer, AHeldCharacterIsGivenUpAfter32Tokens) {
  const Tokenizer& tokenizer = fixture_tokenizer("sentencepiece_bpe");
  std::vector<int32_t> ids = tokenizer.encode("Hi", false);
  const size_t lead = ids.size();
  ids.push_back(*tokenizer.token_to_id("<0xE4>"));
  for (int i = 0; i < 100; ++i) ids.push_back(*tokenizer.token_to_id("</s>"));
  StreamingDetokenizer stream(tokenizer, true);
  std::string joined;
  size_t released_at = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string chunk = stream.step(ids[i]);
    if (i >= lead && !chunk.empty() && released_at == 0) released_at = i;
    joined += chunk;
  }
  joined += stream.finish();
  EXPECT_GT(released_at, lead);
  EXPECT_LE(released_at - lead, 32u);
  EXPECT_EQ(joined, tokenizer.decode(ids, true));
}

TEST(StreamingDetokenizer, KeepsGoingOnInvalidByteFallbackSequences) {
  // "=" as a byte token, then a lone lead byte: Hugging Face's DecodeStream
  // raises here; the stream goes on with valid UTF-8.
  const Tokenizer& tokenizer = fixture_tokenizer("sentencepiece_bpe");
  const std::vector<int32_t> ids = {*tokenizer.token_to_id("<0x3D>"),
                                    *tokenizer.token_to_id("<0xDA>"), *tokenizer.token_to_id("9")};
  const auto out = chunks(tokenizer, ids);
  EXPECT_EQ(out[0], "=");
  for (const std::string& chunk : out) EXPECT_TRUE(utf8::is_valid(chunk));
}

}  // namespace
}  // namespace hive::test
