#pragma once
// One sequence's place in its grammar: which tokens may come next (a
// bitmask), accepting a sampled token, rolling back rejected draft tokens.
//
// The bitmask is the step interface's per-sequence shape: int32 words,
// bitmask_words(vocab_size) of them, token t allowed when bit (t % 32) of
// word t / 32 is set (little-endian bit order, as xgrammar, vLLM and
// SGLang lay it out):
//
//   word 0: tokens 0..31   word 1: tokens 32..63   ...   last word: padded with 0
//   bit:  31 ............ 0
//
// A stop token's bit is set only where the grammar accepts the output so
// far: end of sequence only where the grammar allows it.
//
// Not thread-safe; a matcher belongs to one sequence. Move-only: fork()
// copies the state (n > 1 samples of one prompt).
#include <cstdint>
#include <memory>
#include <span>

#include "runtime/text/grammar/grammar_compiler.hpp"

namespace hive {

class GrammarMatcher {
 public:
  explicit GrammarMatcher(const CompiledGrammar& grammar);
  ~GrammarMatcher();
  GrammarMatcher(GrammarMatcher&&) noexcept;
  GrammarMatcher& operator=(GrammarMatcher&&) noexcept;

  static int32_t bitmask_words(int32_t vocab_size) { return (vocab_size + 31) / 32; }
  int32_t vocab_size() const;

  // Writes the next token's mask into `bitmask` (bitmask_words(vocab_size())
  // words). Returns false when every token is allowed (nothing to apply).
  bool fill_next_token_bitmask(std::span<int32_t> bitmask);
  // Advances by `token_id` when the grammar allows it; false (and no change)
  // when it does not. Accepting a stop token terminates the matcher.
  bool accept_token(int32_t token_id);
  // Forgets the last `num_tokens` accepted tokens (a rejected draft suffix).
  void rollback(int num_tokens);
  // A stop token was accepted: nothing more may follow.
  bool is_terminated() const;
  // The output so far is complete: a stop token would be accepted now.
  bool can_terminate() const;
  // A deep copy of the state; the compiled grammar is shared.
  GrammarMatcher fork() const;
  // Feeds raw bytes (not tokens): the oracle of the mask tests.
  bool accept_bytes(const std::string& bytes);

 private:
  struct Impl;
  explicit GrammarMatcher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hive
