// The mask against a brute force that walks every token's bytes through a
// copy of the matcher, at random states of random valid outputs; rollback,
// fork, end of sequence and bounded whitespace.
#include <gtest/gtest.h>

#include "tests/grammar/grammar_fixture.hpp"

namespace hive {
namespace {

using test::allowed;
using test::bundled_compiler;
using test::bundled_tokenizer;
using test::next_mask;

const char* const kFlatSchema = R"({"type": "object", "properties": {
  "name": {"type": "string", "maxLength": 12}, "age": {"type": "integer", "minimum": 0,
  "maximum": 150}, "ok": {"type": "boolean"}, "tags": {"type": "array",
  "items": {"enum": ["a", "b", "c d"]}, "maxItems": 3}}, "required": ["name", "age"],
  "additionalProperties": false})";

Constraint schema(const char* text) {
  return {ConstraintKind::json_schema, text, {}};
}

std::vector<Constraint> constraints() {
  return {schema(kFlatSchema),
          {ConstraintKind::json_object, "", {}},
          {ConstraintKind::regex, R"([a-c]{2,5}-\d+(\.\d{1,3})?)", {}},
          {ConstraintKind::choice, "", {"yes", "no", "maybe \"so\""}},
          {ConstraintKind::grammar,
           R"G(root ::= "[" item ("," item)* "]"
item ::= [0-9]+ | "(" [a-z]* ")")G",
           {}}};
}

// Every token's bit against feeding its bytes to a fork of the matcher.
void expect_mask_is_brute_force(GrammarMatcher& matcher, const std::string& context) {
  const Tokenizer& tokenizer = bundled_tokenizer();
  const auto& stops = bundled_compiler().stop_token_ids();
  const std::vector<int32_t> mask = next_mask(matcher);
  int mismatches = 0;
  for (int32_t t = 0; t < matcher.vocab_size(); ++t) {
    bool expected;
    if (std::find(stops.begin(), stops.end(), t) != stops.end()) {
      expected = matcher.can_terminate();
    } else if (tokenizer.is_special(t)) {
      expected = false;
    } else {
      GrammarMatcher copy = matcher.fork();
      expected = copy.accept_bytes(tokenizer.token_bytes(t));
    }
    if (allowed(mask, t) != expected && ++mismatches <= 5)
      ADD_FAILURE() << context << ": token " << t << " (\"" << tokenizer.token_bytes(t)
                    << "\") mask " << allowed(mask, t) << ", brute force " << expected;
  }
  // Padding bits past the vocabulary stay clear.
  for (int32_t t = matcher.vocab_size(); t < static_cast<int32_t>(mask.size()) * 32; ++t)
    EXPECT_FALSE(allowed(mask, t)) << context << ": padding bit " << t;
}

TEST(GrammarMask, EqualsBruteForceAtRandomStates) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (const Constraint& constraint : constraints()) {
    const CompiledGrammar grammar = bundled_compiler().compile(constraint);
    for (int walk = 0; walk < 3; ++walk) {
      GrammarMatcher matcher(grammar);
      const int length = static_cast<int>(rng() % 24);
      for (int step = 0; step <= length && !matcher.is_terminated(); ++step) {
        if (step % 4 == 0 || step == length)
          expect_mask_is_brute_force(matcher, str_cat(constraint_kind_name(constraint.kind),
                                                      " walk ", walk, " step ", step));
        test::random_walk(matcher, bundled_tokenizer(), {}, rng, 1);
      }
    }
  }
}

// xgrammar 0.2.9 leaves out of the mask a token that closes two nested
// rules at once: after "((1" in this recursive grammar, ")," is refused
// though its bytes are accepted (the mask is incomplete, never unsound:
// the model cannot write that token and writes ")" then "," instead).
// Soundness is checked here; completeness is reported as a skip until
// xgrammar fixes it, so the brute force above uses non-recursive grammars.
TEST(GrammarMask, NestedRuleEndsAreSoundButIncomplete) {
  const Tokenizer& tokenizer = bundled_tokenizer();
  GrammarMatcher matcher(
      bundled_compiler().compile({ConstraintKind::grammar,
                                  "root ::= \"(\" item (\",\" item)* \")\"\nitem ::= [0-9]+ | root",
                                  {}}));
  ASSERT_TRUE(matcher.accept_bytes("((1"));
  const std::vector<int32_t> mask = next_mask(matcher);
  int incomplete = 0;
  for (int32_t t = 0; t < matcher.vocab_size(); ++t) {
    if (tokenizer.is_special(t)) continue;
    GrammarMatcher copy = matcher.fork();
    const bool accepted = copy.accept_bytes(tokenizer.token_bytes(t));
    if (allowed(mask, t)) {
      EXPECT_TRUE(accepted) << "allowed but refused: " << tokenizer.token_bytes(t);
    }
    incomplete += accepted && !allowed(mask, t);
  }
  if (incomplete > 0)
    GTEST_SKIP() << "xgrammar 0.2.9: " << incomplete
                 << " token(s) accepted by bytes but not in the mask after \"((1\"";
}

TEST(GrammarMask, RollbackRestoresTheMask) {
  std::mt19937_64 rng(test::test_seed());
  GrammarMatcher matcher(bundled_compiler().compile(schema(kFlatSchema)));
  test::random_walk(matcher, bundled_tokenizer(), {}, rng, 3);
  const std::vector<int32_t> before = next_mask(matcher);
  for (const int k : {1, 4, 9}) {
    const test::Walk walk = test::random_walk(matcher, bundled_tokenizer(), {}, rng, k);
    matcher.rollback(static_cast<int>(walk.tokens.size()));
    EXPECT_EQ(next_mask(matcher), before) << "after rolling back " << walk.tokens.size();
  }
}

TEST(GrammarMask, ForkIsIndependent) {
  std::mt19937_64 rng(test::test_seed());
  GrammarMatcher matcher(bundled_compiler().compile(schema(kFlatSchema)));
  const std::vector<int32_t> start = next_mask(matcher);
  GrammarMatcher copy = matcher.fork();
  test::random_walk(copy, bundled_tokenizer(), {}, rng, 5);
  EXPECT_EQ(next_mask(matcher), start);
  EXPECT_NE(next_mask(copy), start);
}

TEST(GrammarMask, EndOfSequenceOnlyWhereAccepted) {
  const auto& stops = bundled_compiler().stop_token_ids();
  const Tokenizer& tokenizer = bundled_tokenizer();
  GrammarMatcher matcher(bundled_compiler().compile({ConstraintKind::choice, "", {"ab", "abc"}}));
  auto stop_allowed = [&] { return allowed(next_mask(matcher), stops[0]); };
  EXPECT_FALSE(stop_allowed());
  EXPECT_FALSE(matcher.accept_token(stops[0]));
  ASSERT_TRUE(matcher.accept_bytes("ab"));
  EXPECT_TRUE(stop_allowed());  // "ab" is complete; "abc" may still follow
  EXPECT_TRUE(matcher.can_terminate());
  ASSERT_TRUE(matcher.accept_bytes("c"));
  EXPECT_TRUE(stop_allowed());
  const std::vector<int32_t> mask = next_mask(matcher);
  for (int32_t t = 0; t < matcher.vocab_size(); ++t) {
    if (t == stops[0]) continue;
    EXPECT_FALSE(allowed(mask, t)) << "token " << tokenizer.token_bytes(t);
  }
  EXPECT_TRUE(matcher.accept_token(stops[0]));
  EXPECT_TRUE(matcher.is_terminated());
}

TEST(GrammarMask, WhitespaceIsBounded) {
  const Tokenizer& tokenizer = bundled_tokenizer();
  std::vector<int32_t> whitespace;
  for (int32_t t = 0; t < static_cast<int32_t>(tokenizer.vocab_size()); ++t) {
    const std::string bytes = tokenizer.token_bytes(t);
    if (!bytes.empty() && !tokenizer.is_special(t) &&
        bytes.find_first_not_of(" \t\n\r") == std::string::npos)
      whitespace.push_back(t);
  }
  ASSERT_FALSE(whitespace.empty());
  for (const char* prefix : {"", "{", "{\"name\"", "{\"name\":", "{\"name\": \"x\","}) {
    GrammarMatcher matcher(bundled_compiler().compile(schema(kFlatSchema)));
    ASSERT_TRUE(matcher.accept_bytes(prefix)) << prefix;
    int taken = 0;
    for (bool progressed = true; progressed && taken < 1000;) {
      progressed = false;
      const std::vector<int32_t> mask = next_mask(matcher);
      for (const int32_t t : whitespace) {
        if (allowed(mask, t) && matcher.accept_token(t)) {
          ++taken;
          progressed = true;
          break;
        }
      }
    }
    EXPECT_LE(taken, 2 * 16) << "whitespace tokens taken after \"" << prefix << "\"";
  }
}

TEST(GrammarMask, MaskWordsAndPadding) {
  EXPECT_EQ(GrammarMatcher::bitmask_words(4096), 128);
  EXPECT_EQ(GrammarMatcher::bitmask_words(151669), 4740);
  GrammarCompiler wide(bundled_tokenizer(), {}, 4100);
  GrammarMatcher matcher(wide.compile({ConstraintKind::json_object, "", {}}));
  std::vector<int32_t> mask(GrammarMatcher::bitmask_words(4100), -1);
  matcher.fill_next_token_bitmask(mask);
  for (int32_t t = static_cast<int32_t>(bundled_tokenizer().vocab_size()); t < 4100; ++t) {
    EXPECT_FALSE(allowed(mask, t)) << "id " << t << " past the tokenizer's vocabulary";
  }
  std::vector<int32_t> short_mask(3);
  EXPECT_THROW(matcher.fill_next_token_bitmask(short_mask), Error);
}

}  // namespace
}  // namespace hive

namespace hive {
namespace {

// What the matcher walks: a token's bytes in mid-sequence, unrepaired.
TEST(GrammarTokenBytes, ByteLevelAndSentencePiece) {
  const Tokenizer& byte_level = test::bundled_tokenizer();
  EXPECT_EQ(byte_level.token_bytes(*byte_level.token_to_id("Ġthe")), " the");
  EXPECT_EQ(byte_level.token_bytes(*byte_level.token_to_id("Ċ")), "\n");
  EXPECT_EQ(byte_level.token_bytes(*byte_level.token_to_id("âĢ")),
            "\xE2\x80");  // part of a character
  const Tokenizer sentencepiece =
      Tokenizer::from_directory(std::string(HIVE_TEST_DATA) + "/tokenizers/sentencepiece_bpe");
  EXPECT_EQ(sentencepiece.token_bytes(*sentencepiece.token_to_id("▁the")), " the");
  EXPECT_EQ(sentencepiece.token_bytes(*sentencepiece.token_to_id("<0x0A>")), "\n");
  EXPECT_EQ(sentencepiece.token_bytes(*sentencepiece.token_to_id("<0xE2>")), "\xE2");
}

}  // namespace
}  // namespace hive
