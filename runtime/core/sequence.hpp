#pragma once
// A Sequence is one stream of tokens being generated: a request's prompt and
// the tokens sampled after it. A request with n > 1 becomes n sequences that
// share the prompt's blocks. Progress is counted in tokens, not phases:
//
//   token_ids:  p0 p1 p2 p3 p4 p5 p6 | o0 o1 o2        (prompt | output)
//               └──── num_computed_tokens ────┘└ rest ┘
//
// Prefill, a chunk of it, a prefix-cache hit, recompute after preemption and
// decode are all "num_computed_tokens catches up with num_tokens()". When a
// step computes up to the last token, the sequence samples one more.
//
// Tokens count as computed, and a sampled token as present, when the step is
// planned: the token it will sample is a placeholder (kPendingToken) until
// the step's result comes back. So the next step can be planned while this
// one runs (the actor engine's async scheduling); it computes the
// placeholder, which the model runner replaces with the token it sampled
// for the sequence in the step before. Pending tokens are always the last.
//
//   token_ids:  p0 p1 p2 p3 p4 p5 p6 | o0 o1  ?         (? = pending)
//
// With speculative decoding a step also computes draft tokens, proposed
// after the last known token and not yet verified; they sit between the
// known tokens and the pending one until the step's result says how many
// the target accepted (the rest are rolled back: scheduler.hpp).
//
//   token_ids:  p0 .. p6 | o0 o1 d0 d1 d2  ?          (d = draft)
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/core/request.hpp"
#include "runtime/core/token_logprobs.hpp"

namespace hive {

using SequenceId = int64_t;

// A token sampled by a step whose result has not come back yet.
inline constexpr int32_t kPendingToken = -1;

enum class SequenceStatus : uint8_t { waiting, running, swapped };

struct Sequence {
  Sequence(SequenceId id, std::shared_ptr<const Request> request, int64_t arrival);

  SequenceId id;
  std::shared_ptr<const Request> request;
  int sample_index = 0;  // which of the request's n samples
  int64_t arrival = 0;   // order of add_request; FCFS and tie-breaks
  std::vector<int32_t> token_ids;
  int64_t num_prompt_tokens = 0;
  int64_t num_computed_tokens = 0;
  int64_t num_pending_tokens = 0;  // trailing kPendingTokens
  int64_t num_draft_tokens = 0;    // unverified drafts before the pending token
  int64_t num_step_drafts = 0;     // drafts its step in flight verifies
  int64_t spec_draft_tokens = 0;   // drafts it verified, all steps
  int64_t spec_accepted_tokens = 0;  // of which accepted
  // Drafts the verifier judged: the accepted ones and each window's first
  // rejected one; those after a rejection were never judged.
  int64_t spec_judged_tokens = 0;
  SequenceStatus status = SequenceStatus::waiting;
  bool forked = false;                     // its n - 1 sibling samples exist
  int64_t num_cached_tokens = 0;           // prefix-cache hit at first admission
  int64_t num_tokens_to_recompute = 0;     // computed tokens dropped by a preemption
  std::vector<std::vector<float>> logits;  // per sampled position, if requested
  std::vector<TokenLogprobs> logprobs;     // per sampled position, if requested
  // A sample slot carried its TokenHistory since the sequence was last
  // admitted: the runner that samples it keeps counting from there.
  bool history_sent = false;
  bool sampling_sent = false;  // SampleSlot::sampling went out since admission

  int64_t num_tokens() const { return static_cast<int64_t>(token_ids.size()); }
  int64_t num_output_tokens() const { return num_tokens() - num_prompt_tokens; }
  int64_t num_uncomputed_tokens() const { return num_tokens() - num_computed_tokens; }
  int64_t num_known_tokens() const {
    return num_tokens() - num_pending_tokens - num_draft_tokens;
  }
  // Drops the pending and draft tokens (their step is void, or the sequence
  // ended).
  void drop_pending_tokens() {
    token_ids.resize(static_cast<size_t>(num_known_tokens()));
    num_pending_tokens = 0;
    num_draft_tokens = 0;
  }
  std::span<const int32_t> output_token_ids() const {
    return std::span<const int32_t>(token_ids).subspan(static_cast<size_t>(num_prompt_tokens));
  }
  // Sequences that will exist once this one samples: n before the fork, else 1.
  int num_seats() const { return forked ? 1 : request->n; }
  // Policy order: lower priority value first (under the priority policy),
  // then arrival, then sample index.
  bool runs_before(const Sequence& other, bool by_priority) const;
};

}  // namespace hive
