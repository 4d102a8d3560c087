#pragma once
// Drafts proposed elsewhere (the draft actor, on a thread of its own),
// served to the Scheduler as a Drafter.
//
// A proposal says which tokens the draft followed: the sequence's first
// `context_len` tokens, of which those from `checked_from` on were not
// known when it was asked for (the drafts of the step then in flight,
// assumed accepted). It serves a sequence whose known tokens are exactly
// those, or those and a first part of the proposal itself: a proposal made
// a window ahead, while the target verified, assumed every draft accepted
// and proposes the target's next token too; when the target did accept all
// and sampled that token, the rest is the next step's draft, with no wait
// for the draft model. Anything else misses and is asked for again.
//
// Exact: a served draft is a draw of the draft model given the tokens the
// sequence really has (its first tokens matched them; which draw the
// target made does not change the draft's later ones), so rejection
// sampling keeps the target's distribution.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/core/drafter.hpp"

namespace hive {

struct Proposal {
  SequenceId seq = 0;
  int64_t context_len = 0;       // the tokens the draft followed
  int64_t checked_from = 0;      // those before were known when it was asked for
  std::vector<int32_t> assumed;  // tokens [checked_from, context_len) it assumed
  Draft draft;                   // what it proposes after them
};

class ProposalBook final : public Drafter {
 public:
  // Replaces the sequence's earlier proposal, if any.
  void add(Proposal proposal);
  // The queries it has no proposal for, in order. A proposal made for
  // exactly the sequence's tokens serves even when empty (the draft had
  // nothing, or no room): asking again would get the same.
  std::vector<DraftQuery> missing(std::span<const DraftQuery> queries) const;

  std::vector<Draft> propose(std::span<const DraftQuery> queries) override;
  void release(SequenceId seq) override;

  // The sequences released since the last call, for the draft actor to drop.
  std::vector<SequenceId> take_released() { return std::exchange(released_, {}); }
  // Drafts served from a proposal made a window ahead.
  int64_t num_served_ahead() const { return num_served_ahead_; }

 private:
  // How many of the proposal's tokens the sequence already has (the
  // target accepted them), or -1 when it does not follow the proposal.
  static int64_t skipped(const Proposal& proposal, const Sequence& seq);

  std::unordered_map<SequenceId, Proposal> proposals_;
  std::vector<SequenceId> released_;
  int64_t num_served_ahead_ = 0;
};

}  // namespace hive
