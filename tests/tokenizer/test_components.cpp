// The tokenizer's parts on hand-made inputs: UTF-8 repair, regex iteration,
// added-token matching, split behaviours, errors that name the field.
#include <gtest/gtest.h>

#include <thread>

#include "base/error.hpp"
#include "runtime/text/tokenizer/regex.hpp"
#include "runtime/text/tokenizer/split_behavior.hpp"
#include "runtime/text/tokenizer/token_trie.hpp"
#include "runtime/text/tokenizer/unicode.hpp"
#include "runtime/text/utf8.hpp"
#include "tests/tokenizer/fixtures.hpp"

namespace hive::test {
namespace {

using namespace hive::tokenizer;

TEST(Utf8, ReplacesEachMaximalInvalidSubsequence) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(utf8::to_valid("abc"), "abc");
  EXPECT_EQ(utf8::to_valid("\xFF"), fffd);
  EXPECT_EQ(utf8::to_valid("a\xE4\xB8"), "a" + fffd);             // truncated: one U+FFFD
  EXPECT_EQ(utf8::to_valid("\xED\xA0\x80"), fffd + fffd + fffd);  // a surrogate: three
  EXPECT_EQ(utf8::to_valid("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
  EXPECT_EQ(utf8::to_valid("\xC0\xAF"), fffd + fffd);  // overlong
  EXPECT_EQ(utf8::to_valid("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);
  EXPECT_TRUE(utf8::is_valid("\xE4\xB8\xAD"));
  EXPECT_FALSE(utf8::is_valid("\xE4\xB8"));
}

TEST(Unicode, NormalizesAroundAsciiRuns) {
  EXPECT_EQ(normalize("Cafe\xCC\x81 ok", NormalForm::NFC), "Caf\xC3\xA9 ok");
  EXPECT_EQ(normalize("\xEF\xAC\x81le", NormalForm::NFKC), "file");
  EXPECT_EQ(normalize("\xC3\xA9", NormalForm::NFD), "e\xCC\x81");
  EXPECT_EQ(to_lowercase("\xC4\xB0stanbul ABC"), "i\xCC\x87stanbul abc");
  EXPECT_TRUE(is_whitespace(0x3000));
  EXPECT_FALSE(is_whitespace(0x200B));
  EXPECT_TRUE(is_numeric(0x0663));
}

TEST(Regex, SkipsAnEmptyMatchRightAfterTheLastMatch) {
  const Regex regex("a*", "test");
  const auto matches = regex.find_all("baab");
  std::vector<std::pair<std::size_t, std::size_t>> got;
  for (const auto& m : matches) got.emplace_back(m.start, m.end);
  // As Oniguruma's find_iter: "", "aa", (no "" at 3), "" at the end.
  const std::vector<std::pair<std::size_t, std::size_t>> want = {{0, 0}, {1, 3}, {4, 4}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(Regex(Regex::escape("a.b*(c)"), "test").find_all("xa.b*(c)").size(), 1u);
  EXPECT_THROW(Regex("(unclosed", "tokenizer.json: pre_tokenizer.pattern"), Error);
}

TEST(TokenTrie, FindsLeftmostLongestWithoutOverlap) {
  TokenTrie trie;
  trie.insert("<|im", 1);
  trie.insert("<|im_start|>", 2);
  trie.insert("start", 3);
  const auto matches = trie.find_all("x<|im_start|>start<|im");
  ASSERT_EQ(matches.size(), 3u);
  EXPECT_EQ(matches[0].value, 2);
  EXPECT_EQ(matches[1].value, 3);
  EXPECT_EQ(matches[2].value, 1);
  EXPECT_EQ(matches[2].start, 18u);
}

TEST(SplitBehavior, MatchesTheDocumentedExample) {
  const std::string text = "the-final--countdown";
  const auto spans = char_spans(text, [](char32_t c) { return c == '-'; });
  auto parts = [&](SplitBehavior behavior) {
    std::vector<std::string> out;
    for (const PieceRange& r : apply_split_behavior(spans, behavior))
      out.push_back(text.substr(r.start, r.end - r.start));
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(parts(SplitBehavior::Removed), (V{"the", "final", "countdown"}));
  EXPECT_EQ(parts(SplitBehavior::Isolated), (V{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(parts(SplitBehavior::MergedWithPrevious), (V{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(parts(SplitBehavior::MergedWithNext), (V{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(parts(SplitBehavior::Contiguous), (V{"the", "-", "final", "--", "countdown"}));
}

// Loads the byte-level fixture with one field replaced; returns the error text.
std::string load_error(const std::string& pointer, const Json& value) {
  Json root = read_json(kTokenizerData / "bytelevel_bpe" / "tokenizer.json");
  root[Json::json_pointer(pointer)] = value;
  try {
    Tokenizer::from_json(root.dump(), "");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Errors, NameTheFieldAndTheUnsupportedType) {
  EXPECT_EQ(load_error("/model/merges/12", 5),
            R"(tokenizer.json: model.merges[12]: expected "a b" or ["a","b"] (got 5))");
  EXPECT_EQ(load_error("/model/merges/3", "a b c"),
            R"(tokenizer.json: model.merges[3]: expected "a b" or ["a","b"] (got "a b c"))");
  EXPECT_EQ(load_error("/model/merges/0", Json::array({"zz9", "q"})),
            R"(tokenizer.json: model.merges[0]: token "zz9" is not in model.vocab)");
  EXPECT_EQ(load_error("/model/type", "Unigram"),
            R"(tokenizer.json: model: unsupported model type "Unigram" (supported: BPE))");
  EXPECT_EQ(load_error("/normalizer", Json{{"type", "Precompiled"}}),
            "tokenizer.json: normalizer: unsupported normalizer type \"Precompiled\" (supported: "
            "NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace, Strip, StripAccents, Sequence)");
  EXPECT_EQ(load_error("/pre_tokenizer/pretokenizers/1", Json{{"type", "Whitespace"}}),
            "tokenizer.json: pre_tokenizer.pretokenizers[1]: unsupported pre-tokenizer type "
            "\"Whitespace\" (supported: Split, ByteLevel, Metaspace, Digits, Sequence)");
  EXPECT_EQ(load_error("/pre_tokenizer/pretokenizers/0/behavior", "Sideways"),
            "tokenizer.json: pre_tokenizer.pretokenizers[0].behavior: expected Removed, Isolated, "
            "MergedWithPrevious, MergedWithNext or Contiguous (got \"Sideways\")");
  EXPECT_EQ(load_error("/decoder", Json{{"type", "WordPiece"}}).substr(0, 65),
            "tokenizer.json: decoder: unsupported decoder type \"WordPiece\" (su");
  EXPECT_EQ(load_error("/model/vocab/a", "x"),
            R"(tokenizer.json: model.vocab["a"]: expected a non-negative integer id (got "x"))");
  const int64_t id_of_a =
      read_json(kTokenizerData / "bytelevel_bpe" / "tokenizer.json")["model"]["vocab"]["a"];
  EXPECT_EQ(load_error("/model/vocab/zz9", id_of_a),
            "tokenizer.json: model.vocab: id " + std::to_string(id_of_a) +
                " is given twice, to \"a\" and \"zz9\"");
  EXPECT_EQ(load_error("/model/dropout", 0.1).substr(0, 52),
            "tokenizer.json: model.dropout: BPE dropout samples r");
  EXPECT_EQ(load_error("/added_tokens/0/content", 7),
            "tokenizer.json: added_tokens[0].content: expected a string (got 7)");
  EXPECT_EQ(load_error("/post_processor/processors/1/single/0/SpecialToken/id", "<nope>"),
            "tokenizer.json: post_processor.processors[1].special_tokens: the template uses "
            "\"<nope>\", which special_tokens does not define");
}

TEST(Errors, NameTheFileForBrokenJsonAndMissingParts) {
  auto message = [](std::string_view tokenizer_json, std::string_view config_json) {
    try {
      Tokenizer::from_json(tokenizer_json, config_json);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(message("{\"version\": \"1.0\"}", ""), "tokenizer.json: model: missing");
  EXPECT_EQ(message("{\"version\": \"2.0\"}", ""),
            "tokenizer.json: version: expected \"1.0\" (got \"2.0\")");
  EXPECT_EQ(message("{oops", "").substr(0, 30), "tokenizer.json: not valid JSON");
  EXPECT_EQ(message(R"({"version": "1.0", "model": {}, "version": "1.0"})", ""),
            "tokenizer.json: key \"version\" given twice in the object at the top level");
  const std::string valid = read_text(kTokenizerData / "bytelevel_bpe" / "tokenizer.json");
  EXPECT_EQ(message(valid, "{\"bos_token\": 3}"),
            "tokenizer_config.json: bos_token: expected a string or {\"content\": ...} (got 3)");
  EXPECT_EQ(message(valid, R"({"bos_token": "a", "eos_token": "b", "bos_token": "c"})"),
            "tokenizer_config.json: key \"bos_token\" given twice in the object at the top level");
  EXPECT_EQ(message(valid, "{\"split_special_tokens\": \"yes\"}"),
            "tokenizer_config.json: split_special_tokens: expected true or false (got \"yes\")");
  EXPECT_THROW(Tokenizer::from_directory("/nonexistent/dir"), Error);
}

TEST(Tokenizer, EncodesConcurrentlyWithTheSameResult) {
  const Tokenizer& tokenizer = fixture_tokenizer("bytelevel_bpe");
  const Json& strings = corpus()["strings"];
  std::vector<std::vector<int32_t>> want;
  for (const Json& s : strings) want.push_back(tokenizer.encode(s.get<std::string>(), true));
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round)
        for (std::size_t i = 0; i < strings.size(); ++i)
          failures[t] += tokenizer.encode(strings[i].get<std::string>(), true) != want[i];
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

TEST(Tokenizer, DecodeSkipsUnknownIdsAndLooksUpTokens) {
  const Tokenizer& tokenizer = fixture_tokenizer("sentencepiece_bpe");
  const auto hello = tokenizer.encode("Hello world", false);
  std::vector<int32_t> with_unknown = {-5, 999999};
  with_unknown.insert(with_unknown.end(), hello.begin(), hello.end());
  EXPECT_EQ(tokenizer.decode(with_unknown, false), "Hello world");
  EXPECT_EQ(tokenizer.token_to_id("<s>"), 1);
  EXPECT_EQ(tokenizer.id_to_token(1), "<s>");
  EXPECT_TRUE(tokenizer.is_special(1));
  EXPECT_FALSE(tokenizer.is_special(hello[0]));
  EXPECT_EQ(tokenizer.token_to_id("no such token"), std::nullopt);
  EXPECT_EQ(tokenizer.id_to_token(999999), std::nullopt);
  EXPECT_EQ(tokenizer.encode("", true), std::vector<int32_t>{1});
  EXPECT_TRUE(tokenizer.encode("", false).empty());
}

}  // namespace
}  // namespace hive::test
