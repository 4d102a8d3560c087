#include "runtime/core/ngram_drafter.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace hive {

void validate(const NgramConfig& config) {
  check(config.min_n >= 1, "speculative ngram: min_n must be at least 1, got ", config.min_n);
  check(config.max_n >= config.min_n, "speculative ngram: max_n (", config.max_n,
        ") must be at least min_n (", config.min_n, ")");
}

std::vector<int32_t> ngram_lookup(std::span<const int32_t> tokens, const NgramConfig& config,
                                  int max_tokens) {
  const auto size = static_cast<int64_t>(tokens.size());
  for (int n = config.max_n; n >= config.min_n; --n) {
    if (n >= size) continue;  // the pattern needs an earlier place to occur
    const auto pattern = tokens.subspan(static_cast<size_t>(size - n));
    // Latest occurrence first: the nearer context predicts better. A match
    // must end before the pattern itself, so at least one token follows it.
    for (int64_t start = size - n - 1; start >= 0; --start) {
      if (!std::equal(pattern.begin(), pattern.end(), tokens.begin() + start)) continue;
      const int64_t from = start + n;
      const int64_t count = std::min<int64_t>(max_tokens, size - from);
      return {tokens.begin() + from, tokens.begin() + from + count};
    }
  }
  return {};
}

NgramDrafter::NgramDrafter(const NgramConfig& config) : config_(config) { validate(config_); }

std::vector<Draft> NgramDrafter::propose(std::span<const DraftQuery> queries) {
  std::vector<Draft> drafts(queries.size());
  for (size_t i = 0; i < queries.size(); ++i)
    drafts[i].token_ids = ngram_lookup(queries[i].seq->token_ids, config_, queries[i].max_tokens);
  return drafts;
}

}  // namespace hive
