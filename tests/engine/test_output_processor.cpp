// Text above the engine core: stop strings on streamed text
// (StopStringMatcher), one sample's text from its ids (SampleText), and the
// samples of many requests (OutputProcessor), on the bundled tokenizer.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "runtime/engine/output_processor.hpp"
#include "runtime/engine/stop_strings.hpp"
#include "tests/common/model_dirs.hpp"
#include "tests/common/random.hpp"

namespace hive {
namespace {

// What the released text must be: the stream stops at the first chunk that
// completes a stop string (generation would not have gone on), cut before
// the earliest of those it completes.
std::string cut_at_first_stop(const std::vector<std::string>& chunks,
                              const std::vector<std::string>& stops) {
  std::string text;
  for (const std::string& chunk : chunks) {
    text += chunk;
    size_t first = std::string::npos;
    for (const std::string& stop : stops) first = std::min(first, text.find(stop));
    if (first != std::string::npos) return text.substr(0, first);
  }
  return text;
}

std::string feed(StopStringMatcher& matcher, const std::vector<std::string>& chunks) {
  std::string released;
  for (const std::string& chunk : chunks) released += matcher.add(chunk);
  return released + matcher.finish();
}

TEST(StopStringMatcher, EndsBeforeAStopStringSplitAcrossChunks) {
  StopStringMatcher matcher({"\n\n"});
  EXPECT_EQ(matcher.add("ab\n"), "ab");  // "\n" may begin the stop string
  EXPECT_FALSE(matcher.stopped());
  EXPECT_EQ(matcher.add("\ncd"), "");
  EXPECT_TRUE(matcher.stopped());
  EXPECT_EQ(matcher.matched(), "\n\n");
  EXPECT_EQ(matcher.add("more"), "");
  EXPECT_EQ(matcher.finish(), "");
}

TEST(StopStringMatcher, HoldsBackOnlyATailThatMayBecomeAStopString) {
  StopStringMatcher matcher({"world", "d!"});
  EXPECT_EQ(matcher.add("hello wor"), "hello ");  // "wor" may become "world"
  EXPECT_EQ(matcher.add("m"), "worm");
  EXPECT_EQ(matcher.add("abcd"), "abc");  // "d" may become "d!"
  EXPECT_EQ(matcher.finish(), "d");       // the stream ended: nothing can match now
  StopStringMatcher none({});
  EXPECT_EQ(none.add("abc"), "abc");
}

TEST(StopStringMatcher, TheStopStringThatStartsFirstWins) {
  StopStringMatcher matcher({"cde", "bcdef", "zz"});
  EXPECT_EQ(feed(matcher, {"a", "bcd", "ef"}), "a");
  EXPECT_EQ(matcher.matched(), "bcdef");
  StopStringMatcher inside({"cd", "abcdx"});
  EXPECT_EQ(feed(inside, {"abcdy"}), "ab");
  EXPECT_EQ(inside.matched(), "cd");
}

TEST(StopStringMatcher, RefusesAnEmptyStopString) {
  EXPECT_THROW(StopStringMatcher({"a", ""}), Error);
}

// Random texts over a small alphabet (so stop strings do occur), random stop
// strings and random chunkings: the released text is always the text cut
// as a search of the whole text after each chunk cuts it, and the held tail never grows past the
// longest stop string (so the work per chunk is bounded: linear overall).
TEST(StopStringMatcher, MatchesTheWholeTextSearchOnRandomStreams) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE("HIVE_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const auto random_text = [&](size_t max_len) {
    std::string text(std::uniform_int_distribution<size_t>(1, max_len)(rng), 'a');
    for (char& c : text) c = static_cast<char>('a' + rng() % 3);
    return text;
  };
  for (int round = 0; round < 2000; ++round) {
    const std::string text = random_text(60);
    std::vector<std::string> stops;
    for (size_t k = rng() % 4; k > 0; --k) stops.push_back(random_text(5));
    std::vector<std::string> chunks;
    for (size_t pos = 0; pos < text.size();) {
      const size_t len = std::min(text.size() - pos, size_t{1} + rng() % 6);
      chunks.push_back(text.substr(pos, len));
      pos += len;
    }
    StopStringMatcher matcher(stops);
    std::string released;
    size_t longest = 0;
    for (const std::string& stop : stops) longest = std::max(longest, stop.size());
    size_t given = 0;
    for (const std::string& chunk : chunks) {
      released += matcher.add(chunk);
      given += chunk.size();
      if (!matcher.stopped()) {
        EXPECT_LT(given - released.size(), std::max<size_t>(longest, 1));
      }
    }
    released += matcher.finish();
    const std::string want = cut_at_first_stop(chunks, stops);
    ASSERT_EQ(released, want) << "text " << text << ", round " << round << ", stops " << ::testing::PrintToString(stops) << ", chunks " << ::testing::PrintToString(chunks);
    EXPECT_EQ(matcher.stopped(), want.size() < text.size());  // a stop string is never empty
  }
}

class SampleTextTest : public ::testing::Test {
 protected:
  const Tokenizer tokenizer = Tokenizer::from_directory(test::model_dir("bundled/hive-moe-target"));
  const std::vector<int32_t> prompt = tokenizer.encode("The wise man", false);
  const std::vector<int32_t> output =
      tokenizer.encode(" said unto them, Go ye\n\ninto the city.", false);
  // The continuation's text as one decode of prompt and output shows it.
  std::string continuation() const {
    std::vector<int32_t> all = prompt;
    all.insert(all.end(), output.begin(), output.end());
    return tokenizer.decode(all, true).substr(tokenizer.decode(prompt, true).size());
  }
  std::string stream(SampleText& text, const std::vector<int32_t>& ids) const {
    std::string released;
    for (const int32_t id : ids) released += text.add(id);
    return released + text.finish();
  }
};

TEST_F(SampleTextTest, StreamsTheContinuationsText) {
  SampleText text(tokenizer, prompt, {});
  EXPECT_EQ(stream(text, output), continuation());
  EXPECT_EQ(text.text(), continuation());
  EXPECT_FALSE(text.stopped());
}

TEST_F(SampleTextTest, EndsBeforeAStopStringAndIgnoresLaterIds) {
  SampleText text(tokenizer, prompt, {{"\n\n", "zebra"}, {}, true});
  const std::string released = stream(text, output);
  EXPECT_EQ(released, " said unto them, Go ye");
  EXPECT_TRUE(text.stopped_by_string());
}

TEST_F(SampleTextTest, AStopOrEndOfSequenceIdIsNotText) {
  const int32_t stop_id = output[2];
  SampleText text(tokenizer, prompt, {{}, {stop_id}, true});
  std::string released;
  for (const int32_t id : output) released += text.add(id);
  released += text.finish();
  const std::vector<int32_t> before(output.begin(), output.begin() + 2);
  SampleText plain(tokenizer, prompt, {});
  EXPECT_EQ(released, stream(plain, before));
  EXPECT_TRUE(text.stopped());
  EXPECT_FALSE(text.stopped_by_string());
}

TEST(OutputProcessor, KeepsEachSampleApartAndForgetsFinishedRequests) {
  const Tokenizer tokenizer = Tokenizer::from_directory(test::model_dir("bundled/hive-moe-target"));
  OutputProcessor processor(tokenizer);
  const std::vector<int32_t> prompt = tokenizer.encode("Hello", false);
  const std::vector<int32_t> a = tokenizer.encode(" world. Bye", false);
  const std::vector<int32_t> b = tokenizer.encode(" there, friend", false);
  processor.add_request("r", 2, prompt, {{". "}, {}, true});
  EXPECT_THROW(processor.add_request("r", 1, prompt, {}), Error);
  EXPECT_THROW(processor.add_request("bad", 1, prompt, {{""}, {}, true}), Error);
  std::string text_a, text_b;
  bool stopped_a = false;
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    if (i < a.size()) {
      const OutputProcessor::Delta delta = processor.add_token("r", 0, a[i]);
      text_a += delta.text;
      EXPECT_FALSE(stopped_a && delta.stopped_by_string) << "a stop is reported once";
      stopped_a = stopped_a || delta.stopped_by_string;
    }
    if (i < b.size()) text_b += processor.add_token("r", 1, b[i]).text;
  }
  EXPECT_TRUE(stopped_a);
  const OutputProcessor::Final final_a = processor.finish("r", 0);
  EXPECT_EQ(text_a + final_a.text, " world");
  EXPECT_EQ(final_a.full_text, " world");
  EXPECT_TRUE(final_a.stopped_by_string);
  EXPECT_TRUE(processor.has_request("r"));
  const OutputProcessor::Final final_b = processor.finish("r", 1);
  EXPECT_EQ(text_b + final_b.text, " there, friend");
  EXPECT_FALSE(final_b.stopped_by_string);
  EXPECT_FALSE(processor.has_request("r"));
  EXPECT_THROW(processor.add_token("r", 0, a[0]), Error);
}

}  // namespace
}  // namespace hive
