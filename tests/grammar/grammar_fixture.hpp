#pragma once
// The bundled 4k vocabulary, its compiler, and random masked walks: each
// step draws one of the tokens the mask allows (a stop token as soon as it
// is allowed, closing characters more often, so that walks end).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "runtime/text/grammar/grammar_compiler.hpp"
#include "runtime/text/grammar/grammar_matcher.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "tests/common/random.hpp"

namespace hive::test {

inline const Tokenizer& bundled_tokenizer() {
  static const Tokenizer tokenizer =
      Tokenizer::from_directory(std::string(HIVE_SOURCE_DIR) + "/models/hive-moe-target");
  return tokenizer;
}

inline GrammarCompiler& bundled_compiler() {
  static GrammarCompiler compiler(bundled_tokenizer());
  return compiler;
}

inline bool allowed(const std::vector<int32_t>& mask, int32_t token) {
  return (static_cast<uint32_t>(mask[token / 32]) >> (token % 32)) & 1u;
}

inline std::vector<int32_t> next_mask(GrammarMatcher& matcher) {
  std::vector<int32_t> mask(GrammarMatcher::bitmask_words(matcher.vocab_size()));
  matcher.fill_next_token_bitmask(mask);
  return mask;
}

struct Walk {
  std::vector<int32_t> tokens;  // stop token excluded
  std::string text;
  bool ended = false;  // a stop token was accepted
};

// Draws up to `max_tokens` tokens through `matcher`.
inline Walk random_walk(GrammarMatcher& matcher, const Tokenizer& tokenizer,
                        const std::vector<int32_t>& stops, std::mt19937_64& rng, int max_tokens) {
  Walk walk;
  for (int step = 0; step < max_tokens && !walk.ended && !matcher.is_terminated(); ++step) {
    const std::vector<int32_t> mask = next_mask(matcher);
    std::vector<int32_t> candidates, closing;
    for (int32_t t = 0; t < matcher.vocab_size(); ++t) {
      if (!allowed(mask, t)) continue;
      if (std::find(stops.begin(), stops.end(), t) != stops.end()) {
        walk.ended = matcher.accept_token(t);
        EXPECT_TRUE(walk.ended) << "the mask allowed stop token " << t;
        break;
      }
      candidates.push_back(t);
      const std::string bytes = tokenizer.token_bytes(t);
      if (bytes.find_first_of("\"}],") != std::string::npos) closing.push_back(t);
    }
    if (walk.ended) break;
    if (candidates.empty()) {
      ADD_FAILURE() << "no token allowed after \"" << walk.text << "\"";
      break;
    }
    const auto& pool = !closing.empty() && rng() % 3 == 0 ? closing : candidates;
    const int32_t token = pool[rng() % pool.size()];
    EXPECT_TRUE(matcher.accept_token(token)) << "the mask allowed token " << token;
    walk.tokens.push_back(token);
    walk.text += tokenizer.token_bytes(token);
  }
  return walk;
}

}  // namespace hive::test
