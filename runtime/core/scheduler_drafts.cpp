// The scheduler's half of speculative decoding (scheduler.hpp): which
// running sequences get drafts, how long (the load-aware control), and what
// a step's verdict keeps of them.
#include <algorithm>

#include "base/error.hpp"
#include "runtime/core/scheduler.hpp"

namespace hive {

bool Scheduler::may_speculate(const Sequence& seq) const {
  // All its tokens known and computed but the last (a decode), and not a
  // parent about to fork: its children sample from this very run's row.
  return seq.num_pending_tokens == 0 && seq.num_step_drafts == 0 &&
         seq.num_uncomputed_tokens() == 1 && (seq.forked || seq.request->n == 1);
}

// Load-aware control: each query's γ from its acceptance, and none at all
// when the step would not gain by them (spec_cost.hpp). Returns false then.
bool Scheduler::control_drafts(std::vector<DraftQuery>& queries) const {
  int64_t step_tokens = 0;
  for (const Sequence* seq : running_) step_tokens += seq->num_uncomputed_tokens();
  step_tokens = std::clamp<int64_t>(step_tokens, 1, config_.max_num_batched_tokens);
  std::vector<double> alphas;
  std::vector<int> caps;
  for (const DraftQuery& q : queries) {
    alphas.push_back(estimated_acceptance(q.seq->spec_judged_tokens, q.seq->spec_accepted_tokens));
    caps.push_back(q.max_tokens);
  }
  const std::vector<int> lengths = plan_draft_lengths(spec_cost_, alphas, caps, step_tokens);
  for (size_t i = 0; i < queries.size(); ++i) queries[i].max_tokens = lengths[i];
  std::erase_if(queries, [](const DraftQuery& q) { return q.max_tokens == 0; });
  return !queries.empty();
}

std::vector<DraftQuery> Scheduler::draft_queries(bool* declined) const {
  std::vector<DraftQuery> queries;
  if (declined) *declined = false;
  if (!drafter_ || config_.num_speculative_tokens == 0) return queries;
  for (const Sequence* seq : running_) {
    if (!may_speculate(*seq)) continue;
    // The accepted drafts and the token after them must fit in max_tokens
    // and in the context.
    int64_t room = seq->request->stop.max_tokens - seq->num_output_tokens() - 1;
    if (config_.max_model_len > 0)
      room = std::min(room, config_.max_model_len - seq->num_tokens() - 1);
    const auto max_tokens = static_cast<int>(
        std::min<int64_t>(room, config_.num_speculative_tokens));
    if (max_tokens >= 1) queries.push_back({seq, max_tokens});
  }
  if (!spec_cost_.target.empty() && !queries.empty()) {
    const bool none = !control_drafts(queries);
    if (declined) *declined = none;
  }
  return queries;
}

std::unordered_map<SequenceId, Draft> Scheduler::propose_drafts() {
  std::unordered_map<SequenceId, Draft> drafts;
  bool declined = false;
  const std::vector<DraftQuery> queries = draft_queries(&declined);
  if (declined) ++stats_.spec_decode.num_steps_declined;
  if (queries.empty()) return drafts;
  std::vector<Draft> proposed = drafter_->propose(queries);
  check(proposed.size() == queries.size(), "scheduler: the drafter answered ", proposed.size(),
        " of ", queries.size(), " queries");
  for (size_t i = 0; i < queries.size(); ++i) {
    Draft& draft = proposed[i];
    check(static_cast<int>(draft.token_ids.size()) <= queries[i].max_tokens &&
              (draft.probs.empty() || draft.probs.size() == draft.token_ids.size()),
          "scheduler: the drafter proposed ", draft.token_ids.size(), " tokens (at most ",
          queries[i].max_tokens, ") with ", draft.probs.size(), " distributions");
    if (!draft.token_ids.empty()) drafts.emplace(queries[i].seq->id, std::move(draft));
  }
  return drafts;
}

void Scheduler::add_drafts(Sequence& seq, Draft& draft, int64_t budget, int64_t reserve) {
  // Drafts take what is left of the budget and free blocks only, leaving
  // `reserve` blocks: they never make anyone wait or be preempted.
  auto count = static_cast<int64_t>(draft.token_ids.size());
  count = std::min(count, budget);
  const auto last = seq.token_ids.size();
  seq.token_ids.insert(seq.token_ids.end(), draft.token_ids.begin(),
                       draft.token_ids.begin() + count);
  seq.num_draft_tokens = count;
  const int64_t free_blocks = kv_cache_.device_pool().num_free_blocks() - reserve;
  while (seq.num_draft_tokens > 0 &&
         kv_cache_.num_blocks_needed(seq, 1 + seq.num_draft_tokens) > free_blocks) {
    --seq.num_draft_tokens;
    seq.token_ids.pop_back();
  }
  if (seq.num_draft_tokens == 0) return;
  const auto n = static_cast<size_t>(seq.num_draft_tokens);
  if (!draft.probs.empty()) {
    draft.probs.resize(n);
    draft_probs_ = std::move(draft.probs);
  }
  seq.num_step_drafts = seq.num_draft_tokens;
  seq.spec_draft_tokens += seq.num_draft_tokens;
  SpecDecodeStats& spec = stats_.spec_decode;
  ++spec.num_drafts;
  spec.num_draft_tokens += seq.num_draft_tokens;
  if (spec.drafts_per_position.size() < n) {
    spec.drafts_per_position.resize(n, 0);
    spec.accepted_per_position.resize(n, 0);
  }
  for (size_t i = 0; i < n; ++i) ++spec.drafts_per_position[i];
  check(seq.token_ids.size() == last + n, "scheduler: drafts of sequence ", seq.id);
}

void Scheduler::accept_draft(Sequence& seq, int32_t token) {
  const auto at = static_cast<size_t>(seq.num_known_tokens());
  check(seq.num_draft_tokens > 0 && seq.token_ids[at] == token, "scheduler: sequence ", seq.id,
        " accepted token ", token, ", which is not its next draft");
  const auto position = static_cast<size_t>(seq.num_step_drafts - seq.num_draft_tokens);
  --seq.num_draft_tokens;
  ++seq.spec_accepted_tokens;
  ++seq.spec_judged_tokens;
  ++stats_.spec_decode.num_accepted_tokens;
  ++stats_.spec_decode.accepted_per_position.at(position);
}

void Scheduler::reject_drafts(Sequence& seq) {
  seq.num_step_drafts = 0;
  if (seq.num_draft_tokens == 0) return;
  ++seq.spec_judged_tokens;  // the first of them; the target sampled another
  // They were computed; the target sampled another token in place of the
  // first of them: their KV is void and their blocks go back.
  const auto pending = seq.token_ids.end() - seq.num_pending_tokens;
  seq.token_ids.erase(pending - seq.num_draft_tokens, pending);
  seq.num_computed_tokens -= seq.num_draft_tokens;
  seq.num_draft_tokens = 0;
  kv_cache_.truncate(seq.id, seq.num_computed_tokens);
}

}  // namespace hive
