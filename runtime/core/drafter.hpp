#pragma once
// A Drafter proposes tokens likely to follow a sequence, for speculative
// decoding: the scheduler plans them after the sequence's last token, the
// target computes all of them in one step, and rejection sampling keeps
// those the target agrees with (runtime/model/rejection_sampler.hpp).
//
// A drafter that samples from a distribution (a draft model) returns it
// per token, so verification can divide by it; one that proposes without
// one (n-gram lookup) returns none, which verification reads as all the
// probability on the proposed token.
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/core/sequence.hpp"

namespace hive {

// The most draft tokens a sequence verifies in one step.
inline constexpr int kMaxSpeculativeTokens = 16;

struct DraftQuery {
  const Sequence* seq = nullptr;  // its tokens are all known
  int max_tokens = 0;             // propose at most this many (>= 1)
};

struct Draft {
  std::vector<int32_t> token_ids;          // may be empty: nothing to propose
  std::vector<std::vector<float>> probs;   // per token, over the vocabulary; or empty
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  // One draft per query, in order.
  virtual std::vector<Draft> propose(std::span<const DraftQuery> queries) = 0;
  // The sequence ended or lost its KV (preempted, workers replaced): a
  // drafter holding state for it drops that state.
  virtual void release(SequenceId /*seq*/) {}
};

}  // namespace hive
