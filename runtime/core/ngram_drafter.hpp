#pragma once
// Prompt lookup (n-gram) drafting: the sequence's last n tokens are looked
// up in its earlier tokens (prompt and output), and the tokens that followed
// their latest earlier occurrence are proposed. n runs from max_n down to
// min_n; the first n with a match wins. No model, no state: it pays where
// outputs copy their input (editing, summaries, code, retrieval answers).
#include "runtime/core/drafter.hpp"

namespace hive {

struct NgramConfig {
  int min_n = 1;
  int max_n = 3;
};

// Throws hive::Error unless 1 <= min_n <= max_n.
void validate(const NgramConfig& config);

// The tokens after the latest earlier occurrence of `tokens`' last n tokens
// (n from max_n down to min_n), at most max_tokens of them; empty when none
// occurs.
std::vector<int32_t> ngram_lookup(std::span<const int32_t> tokens, const NgramConfig& config,
                                  int max_tokens);

class NgramDrafter final : public Drafter {
 public:
  explicit NgramDrafter(const NgramConfig& config);
  std::vector<Draft> propose(std::span<const DraftQuery> queries) override;

 private:
  NgramConfig config_;
};

}  // namespace hive
