#pragma once
// Scheduler: iteration-level continuous batching under one token budget.
// Every step it decides which sequences run how many tokens; there is no
// prefill phase and no decode phase, only num_computed_tokens catching up.
//
//   schedule():
//     1. running, in policy order: each gets min(uncomputed, budget) tokens;
//        when blocks run out, the last running sequence is preempted (swap to
//        the host pool or recompute, whichever costs less) until it fits
//     2. swapped, if nothing was preempted: swapped back in, in policy order,
//        when the blocks allow it to run its next tokens at once
//     3. waiting, if nothing was preempted, and only those ahead of every
//        sequence still swapped out in policy order (a newcomer behind one
//        must not take the blocks it waits for):
//        admitted in policy order while max_num_seqs, the budget and the
//        blocks allow; a prefix-cache hit skips its blocks; prompts longer
//        than the budget run in chunks
//   update(sampled tokens): fills in the step's sampled tokens, checks stop
//     conditions and frees finished sequences.
//
// schedule() counts a plan's tokens as computed and its samples as pending
// tokens (see sequence.hpp), so plans may run ahead of their results: the
// actor engine plans step t+1 before step t's update() (async scheduling).
// update()s must come in the order of their plans. A sequence that finishes
// in step t then still runs in step t+1 (that sample is dropped); a
// sequence whose pending token is its max_tokens-th is not planned again.
//
// Speculative decoding (num_speculative_tokens > 0 and a drafter): a
// running sequence whose tokens are all known and all computed but its last
// gets a draft of up to γ tokens, planned after its last token in the same
// run (γ + 1 tokens, logits at each). The drafts count as computed and sit
// before the pending token (sequence.hpp). update() takes the accepted
// drafts and the one token the target sampled after them, and rolls the
// rest back: their computed count and the blocks only they needed (no
// block holding a draft is ever put in the prefix cache, as only known
// tokens are). A sequence is planned again only once its result is back,
// so speculation runs with one step in flight.
//
// A request with n > 1 samples runs its prompt once; when the prompt's last
// chunk is scheduled the sequence forks n - 1 children that share its blocks
// (copy-on-write) and sample from the same logits row.
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/core/drafter.hpp"
#include "runtime/core/kv_cache_manager.hpp"
#include "runtime/core/sequence.hpp"
#include "runtime/core/spec_cost.hpp"
#include "runtime/core/token_logprobs.hpp"

namespace hive {

enum class SchedulingPolicy : uint8_t { fcfs, priority };
enum class PreemptionMode : uint8_t { by_cost, recompute, swap };

// A launch file's scheduler: section is this struct (actors/hive_config.hpp),
// and its defaults are the product's. eos_token_ids, num_speculative_tokens
// and an unset max_model_len are derived from the model and the speculative
// settings (engine_core_config).
struct SchedulerConfig {
  int64_t max_num_batched_tokens = 512;  // the token budget of one step
  int64_t max_num_seqs = 64;
  bool enable_chunked_prefill = true;
  SchedulingPolicy policy = SchedulingPolicy::fcfs;
  PreemptionMode preemption_mode = PreemptionMode::by_cost;
  // by_cost compares the estimated seconds to recompute a victim's computed
  // tokens with those to swap its blocks out and back in.
  double recompute_seconds_per_token = 1e-3;
  double swap_seconds_per_block = 1e-4;
  std::vector<int32_t> eos_token_ids;  // the model's; a request's ignore_eos skips them
  // The model's context length (max_position_embeddings); 0: no limit.
  // prompt + max_tokens must fit in it.
  int64_t max_model_len = 0;
  // The actor engine plans step t+1 while step t runs (actors/
  // scheduler_actor.hpp); the offline LLMEngine runs one step at a time.
  bool async_scheduling = true;
  // γ: the most draft tokens a sequence verifies per step; 0: no
  // speculation. Needs a drafter (set_drafter).
  int num_speculative_tokens = 0;
  // The actor engine's deadlines (actors/scheduler_actor.hpp): a step not
  // answered by worker_timeout is a fault, and so are workers not started by
  // worker_start_timeout (a shard load can take minutes). The offline
  // LLMEngine has no workers to wait for.
  std::chrono::milliseconds worker_timeout{60000};
  std::chrono::milliseconds worker_start_timeout{600000};
};

// Throws hive::Error naming the first bad field.
void validate(const SchedulerConfig& config);

// One sequence's work in a step: token_ids at positions num_computed_tokens...
struct ScheduledSequence {
  SequenceId seq_id = 0;
  int64_t num_computed_tokens = 0;
  std::vector<int32_t> token_ids;
  // The block table as a change to the one the workers hold from the
  // sequence's last run (they hold the tables; docs/design/core.md, "Block
  // tables: the worker holds them"): keep its first num_kept_blocks, append
  // new_block_ids. The result covers every position up to the last token.
  int32_t num_kept_blocks = 0;
  std::vector<int32_t> new_block_ids;
  bool needs_logits = false;  // the run ends at the last known token
  // The run's last num_draft_tokens tokens are drafts: logits are needed at
  // each of its last num_draft_tokens + 1 tokens.
  int32_t num_draft_tokens = 0;
};

// The tokens a sampler's penalties read: the prompt and the known output.
struct TokenHistory {
  std::vector<int32_t> prompt_token_ids;
  std::vector<int32_t> output_token_ids;  // without the pending token, which the runner knows
};

// A sequence to sample this step, from the logits of `scheduled_index`'s last
// token (forked children share their parent's row).
struct SampleSlot {
  SequenceId seq_id = 0;
  size_t scheduled_index = 0;
  // Sent with a sequence's first sample after each admission, its seed
  // already offset by the sample's index; the runner keeps a Sampler per
  // sequence and reads nothing else of them later.
  std::optional<SamplingParams> sampling;
  bool return_logits = false;
  int64_t num_sampled = 0;  // tokens the sequence sampled before this one
  // With penalties on, the sequence's first sample since it was admitted
  // (or forked) carries its history; the runner counts its own samples from
  // there. See docs/design/core.md, "Penalties see the whole sequence".
  std::optional<TokenHistory> history = std::nullopt;
  // Speculation: the drafts to verify (the run's last tokens) and, from a
  // drafter that samples, their distributions; the runner returns the
  // accepted drafts, then one sampled token.
  std::vector<int32_t> draft_token_ids = {};
  std::vector<std::vector<float>> draft_probs = {};
};

// What a worker needs for one step. Block copies run before the forward pass,
// in this order: swap_out, swap_in, copy_on_write.
struct StepPlan {
  std::vector<ScheduledSequence> sequences;
  std::vector<SampleSlot> samples;
  std::vector<BlockCopy> swap_out;           // device block -> host block
  std::vector<BlockCopy> swap_in;            // host block -> device block
  std::vector<BlockCopy> copy_on_write;      // device block -> device block
  std::vector<SequenceId> finished_seq_ids;  // since the last plan: drop their state

  int64_t num_batched_tokens() const;
  // No sequence runs and no block moves (finished_seq_ids may be set).
  bool runs_nothing() const {
    return sequences.empty() && swap_out.empty() && swap_in.empty() && copy_on_write.empty();
  }
};

struct SampledToken {
  SequenceId seq_id = 0;
  int32_t token = 0;
  std::vector<float> logits;  // when the slot asked for them
  // Non-empty: no token could be sampled (logits all NaN or -inf); the
  // sequence fails with this error, the rest of the batch goes on.
  std::string error;
  std::optional<TokenLogprobs> logprobs = std::nullopt;  // when the sampling params ask for them
  // A draft the target accepted; the sequence's next token follows in
  // another SampledToken (a sequence's tokens come in order).
  bool accepted_draft = false;
};

// A finished (or aborted) sequence.
struct SequenceOutput {
  std::string request_id;
  int sample_index = 0;
  std::vector<int32_t> token_ids;  // generated tokens
  FinishReason finish_reason = FinishReason::none;
  int64_t num_prompt_tokens = 0;
  int64_t num_cached_tokens = 0;
  std::vector<std::vector<float>> logits;
  std::string error;  // non-empty: the sequence failed (finish_reason aborted)
  std::vector<TokenLogprobs> logprobs = {};  // per generated token, when asked for
  int64_t num_draft_tokens = 0;              // speculation: drafts verified
  int64_t num_accepted_tokens = 0;           // of which the target accepted
  int64_t num_judged_draft_tokens = 0;       // the accepted and each window's first rejected
};

// Speculative decoding's counters. accepted_per_position[i]: drafts whose
// (i+1)-th token was accepted; drafts_per_position[i]: drafts that had one.
struct SpecDecodeStats {
  int64_t num_drafts = 0;  // sequence-steps that verified a draft
  int64_t num_draft_tokens = 0;
  int64_t num_accepted_tokens = 0;
  // Steps the load-aware control planned without drafts that it had.
  int64_t num_steps_declined = 0;
  std::vector<int64_t> drafts_per_position;
  std::vector<int64_t> accepted_per_position;
  double acceptance_rate() const {
    return num_draft_tokens > 0
               ? static_cast<double>(num_accepted_tokens) / static_cast<double>(num_draft_tokens)
               : 0.0;
  }
  // Tokens a verifying step adds per sequence: accepted drafts plus one.
  double mean_accepted_length() const {
    return num_drafts > 0 ? 1.0 + static_cast<double>(num_accepted_tokens) /
                                      static_cast<double>(num_drafts)
                          : 0.0;
  }
};

struct SchedulerStats {
  int64_t num_steps = 0;
  int64_t num_preemptions_recompute = 0;
  int64_t num_preemptions_swap = 0;
  int64_t num_tokens_recomputed = 0;  // computed tokens computed again after a recompute preemption
  int64_t max_num_running = 0;
  SpecDecodeStats spec_decode;
};

class Scheduler {
 public:
  // The KV-cache manager must outlive the scheduler.
  Scheduler(const SchedulerConfig& config, KVCacheManager& kv_cache);

  // Throws hive::Error for a request that could never run: empty prompt,
  // max_tokens < 1, more blocks than the pool has, a duplicate id, ...
  void add_request(Request request);
  // Finishes every sequence of the request (or only its sample
  // `sample_index`, once the request's samples have forked) with `reason`:
  // aborted for a cancel, stop_string when the output processor found one.
  // The outputs come back from the next update(). Unknown ids are ignored.
  void abort_request(const std::string& request_id, FinishReason reason = FinishReason::aborted,
                     std::optional<int> sample_index = std::nullopt);

  // Speculation's drafter (num_speculative_tokens > 0); it must outlive
  // the scheduler. The scheduler tells it of every sequence that ends or
  // loses its KV.
  void set_drafter(Drafter* drafter) { drafter_ = drafter; }
  // Load-aware control of the drafts (spec_cost.hpp); empty: none.
  void set_spec_cost(SpecCostModel cost) { spec_cost_ = std::move(cost); }

  StepPlan schedule();
  // The drafts the next schedule() asks its drafter for, if nothing changes
  // before it: the running sequences that may speculate, each with the
  // length the load-aware control allows. `declined`: the control allowed
  // none of those there were.
  std::vector<DraftQuery> draft_queries(bool* declined = nullptr) const;
  // Takes back the last plan, which must run nothing: a caller that does not
  // send such a plan says so, as it will never update() it. Its finished
  // sequences go out with the next plan.
  void drop_empty_plan(StepPlan plan);
  // The KV cache lost its contents (its workers were replaced; the steps in
  // flight, if any, are void): the KV manager starts empty and every running
  // or swapped sequence waits to be computed again from its tokens, as after
  // a recompute preemption. Its outputs continue where they were.
  void recompute_all();
  // The tokens sampled by the oldest plan not yet updated; returns the
  // sequences that finished (and those aborted since the last update).
  // `appended` gets the indices of the sampled tokens that joined an output
  // (not those of sequences that ended before them: finished, aborted, or
  // stopped by an accepted draft).
  std::vector<SequenceOutput> update(std::span<const SampledToken> sampled,
                                     std::vector<size_t>* appended = nullptr);
  // The sequences aborted since the last update, without one.
  std::vector<SequenceOutput> take_aborted() { return std::exchange(aborted_, {}); }

  bool has_unfinished() const { return !sequences_.empty(); }
  // Sequences aborted since the last update(), whose outputs it will return.
  bool has_aborted() const { return !aborted_.empty(); }
  size_t num_waiting() const { return waiting_.size(); }
  size_t num_running() const { return running_.size(); }
  size_t num_swapped() const { return swapped_.size(); }
  const SchedulerStats& stats() const { return stats_; }
  const SchedulerConfig& config() const { return config_; }
  const Sequence& sequence(SequenceId id) const;
  // Whether the sequence is unfinished (waiting, running or swapped out).
  bool has_sequence(SequenceId id) const { return sequences_.count(id) > 0; }

 private:
  using Queue = std::deque<Sequence*>;
  bool by_priority() const { return config_.policy == SchedulingPolicy::priority; }
  void insert_in_order(Queue& queue, Sequence* seq) const;
  int64_t num_seats_taken() const;

  bool awaits_last_token(const Sequence& seq) const;
  bool schedule_running(StepPlan& plan, int64_t& budget);
  void schedule_swapped(StepPlan& plan, int64_t& budget);
  void schedule_waiting(StepPlan& plan, int64_t& budget);
  // Drafts for the running sequences that may speculate this step.
  std::unordered_map<SequenceId, Draft> propose_drafts();
  bool may_speculate(const Sequence& seq) const;
  bool control_drafts(std::vector<DraftQuery>& queries) const;
  // Plans the drafts after the sequence's last token if its blocks allow.
  void add_drafts(Sequence& seq, Draft& draft, int64_t budget, int64_t reserve);
  void accept_draft(Sequence& seq, int32_t token);
  void reject_drafts(Sequence& seq);
  // Allocates the blocks and adds the run; a prefix hit is for an admission.
  void add_to_plan(Sequence& seq, int64_t num_tokens, const PrefixHit& hit, StepPlan& plan);
  void fork_children(Sequence& parent, size_t scheduled_index, StepPlan& plan);
  void preempt(Sequence& victim, StepPlan& plan);
  bool should_swap(const Sequence& victim) const;
  SequenceOutput finish(Sequence& seq, FinishReason reason);
  void track(std::unique_ptr<Sequence> seq);

  SchedulerConfig config_;
  KVCacheManager& kv_cache_;
  Drafter* drafter_ = nullptr;
  SpecCostModel spec_cost_;
  // schedule()'s drafts, and the distributions of the one add_to_plan takes.
  std::unordered_map<SequenceId, Draft> drafts_;
  std::vector<std::vector<float>> draft_probs_;
  std::unordered_map<SequenceId, std::unique_ptr<Sequence>> sequences_;
  // The unfinished sequences of each request, in sample order.
  std::unordered_map<std::string, std::vector<SequenceId>> by_request_;
  Queue waiting_, running_, swapped_;
  std::vector<Sequence*> new_children_;  // forked this step, join running_ at its end
  std::vector<SequenceOutput> aborted_;
  std::vector<SequenceId> finished_since_plan_;
  // Per plan not yet updated, oldest first: the tokens it counted as
  // computed, per sequence. Plans voided by recompute_all() give them back.
  std::deque<std::vector<std::pair<SequenceId, int64_t>>> unconfirmed_;
  SequenceId next_seq_id_ = 0;
  int64_t next_arrival_ = 0;
  SchedulerStats stats_;
};

}  // namespace hive
