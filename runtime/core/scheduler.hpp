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
// A request with n > 1 samples runs its prompt once; when the prompt's last
// chunk is scheduled the sequence forks n - 1 children that share its blocks
// (copy-on-write) and sample from the same logits row.
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/core/kv_cache_manager.hpp"
#include "runtime/core/sequence.hpp"
#include "runtime/core/token_logprobs.hpp"

namespace hive {

enum class SchedulingPolicy : uint8_t { fcfs, priority };
enum class PreemptionMode : uint8_t { by_cost, recompute, swap };

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
};

// Throws hive::Error naming the first bad field.
void validate(const SchedulerConfig& config);

// One sequence's work in a step: token_ids at positions num_computed_tokens...
struct ScheduledSequence {
  SequenceId seq_id = 0;
  int64_t num_computed_tokens = 0;
  std::vector<int32_t> token_ids;
  std::vector<int32_t> block_table;  // covers every position up to the last scheduled one
  bool needs_logits = false;         // the run ends at the last known token
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
  SamplingParams sampling;
  bool return_logits = false;
  int64_t num_sampled = 0;  // tokens the sequence sampled before this one
  // With penalties on, the sequence's first sample since it was admitted
  // (or forked) carries its history; the runner counts its own samples from
  // there. See docs/architecture.md, "Penalties see the whole sequence".
  std::optional<TokenHistory> history = std::nullopt;
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
};

struct SchedulerStats {
  int64_t num_steps = 0;
  int64_t num_preemptions_recompute = 0;
  int64_t num_preemptions_swap = 0;
  int64_t num_tokens_recomputed = 0;  // computed tokens computed again after a recompute preemption
  int64_t max_num_running = 0;
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

  StepPlan schedule();
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
  std::vector<SequenceOutput> update(std::span<const SampledToken> sampled);
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
  // Allocates the blocks and adds the run; a prefix hit is for an admission.
  void add_to_plan(Sequence& seq, int64_t num_tokens, const PrefixHit& hit, StepPlan& plan);
  void fork_children(Sequence& parent, size_t scheduled_index, StepPlan& plan);
  void preempt(Sequence& victim, StepPlan& plan);
  bool should_swap(const Sequence& victim) const;
  SequenceOutput finish(Sequence& seq, FinishReason reason);
  void track(std::unique_ptr<Sequence> seq);

  SchedulerConfig config_;
  KVCacheManager& kv_cache_;
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
