#include "runtime/core/scheduler.hpp"

#include <algorithm>
#include <utility>

#include "base/error.hpp"

namespace hive {

int64_t StepPlan::num_batched_tokens() const {
  int64_t total = 0;
  for (const ScheduledSequence& s : sequences) total += static_cast<int64_t>(s.token_ids.size());
  return total;
}

void validate(const SchedulerConfig& config) {
  check(config.max_num_batched_tokens >= 1, "max_num_batched_tokens must be >= 1 (got ",
        config.max_num_batched_tokens, ")");
  check(config.max_num_seqs >= 1, "max_num_seqs must be >= 1 (got ", config.max_num_seqs, ")");
  check(config.max_model_len >= 0, "max_model_len must be >= 0 (got ", config.max_model_len, ")");
  check(config.recompute_seconds_per_token >= 0 && config.swap_seconds_per_block >= 0,
        "preemption costs must be >= 0 (got ", config.recompute_seconds_per_token, " s/token and ",
        config.swap_seconds_per_block, " s/block)");
  check(
      config.num_speculative_tokens >= 0 && config.num_speculative_tokens <= kMaxSpeculativeTokens,
      "num_speculative_tokens must be in [0, ", kMaxSpeculativeTokens, "] (got ",
      config.num_speculative_tokens, ")");
}

Scheduler::Scheduler(const SchedulerConfig& config, KVCacheManager& kv_cache)
    : config_(config), kv_cache_(kv_cache) {
  validate(config);
}

void Scheduler::add_request(Request request) {
  const std::string& id = request.id;
  check(!id.empty(), "a request needs an id");
  check(!by_request_.count(id), "request id '", id, "' is already in use");
  check(!request.prompt_token_ids.empty(), "request ", id, ": the prompt is empty");
  check(request.stop.max_tokens >= 1, "max_tokens must be >= 1 (got ", request.stop.max_tokens,
        ")");
  check(request.n >= 1 && request.n <= config_.max_num_seqs, "request ", id,
        ": n must be in [1, max_num_seqs = ", config_.max_num_seqs, "] (got ", request.n, ")");
  validate(request.sampling);
  const auto prompt_len = static_cast<int64_t>(request.prompt_token_ids.size());
  check(config_.max_model_len == 0 || request.stop.max_tokens <= config_.max_model_len - prompt_len,
        "request ", id, ": prompt (", prompt_len, " tokens) + max_tokens (",
        request.stop.max_tokens, ") exceed the model's context length of ", config_.max_model_len,
        " tokens (max_position_embeddings)");
  const int64_t block_size = kv_cache_.config().block_size;
  const int64_t pool_blocks = kv_cache_.device_pool().num_allocatable_blocks();
  // Compared before adding: a max_tokens near INT64_MAX must not overflow.
  check(request.stop.max_tokens <= pool_blocks * block_size - prompt_len, "request ", id,
        ": prompt (", prompt_len, " tokens) + max_tokens (", request.stop.max_tokens,
        ") exceed the KV pool's ", pool_blocks * block_size, " tokens (", pool_blocks,
        " blocks of ", block_size, ")");
  const int64_t max_len = prompt_len + request.stop.max_tokens;
  check(config_.enable_chunked_prefill || max_len <= config_.max_num_batched_tokens, "request ", id,
        ": prompt + max_tokens = ", max_len,
        " tokens exceed max_num_batched_tokens = ", config_.max_num_batched_tokens,
        " and chunked prefill is off");
  if (!request.sampling.seed) request.sampling.seed = random_seed();
  auto seq = std::make_unique<Sequence>(
      next_seq_id_++, std::make_shared<const Request>(std::move(request)), next_arrival_++);
  insert_in_order(waiting_, seq.get());
  track(std::move(seq));
}

void Scheduler::track(std::unique_ptr<Sequence> seq) {
  by_request_[seq->request->id].push_back(seq->id);
  const SequenceId id = seq->id;
  sequences_.emplace(id, std::move(seq));
}

void Scheduler::abort_request(const std::string& request_id, FinishReason reason,
                              std::optional<int> sample_index) {
  const auto samples = by_request_.find(request_id);
  if (samples == by_request_.end()) return;
  std::vector<Sequence*> matching;
  for (const SequenceId id : samples->second) {
    Sequence* seq = sequences_.at(id).get();
    if (!sample_index || seq->sample_index == *sample_index) matching.push_back(seq);
  }
  for (Sequence* seq : matching) {
    // One sample of n ends only once the samples exist (they fork when the
    // prompt completes, before any is sampled); before, the request is one.
    if (sample_index && !seq->forked && seq->request->n > 1) continue;
    // Samples 1..n-1 fork off only when the prompt completes; aborted
    // earlier, they still finish, so the owner hears of all n samples.
    const int unforked_samples = seq->forked || sample_index ? 0 : seq->request->n - 1;
    aborted_.push_back(finish(*seq, reason));
    for (int k = 1; k <= unforked_samples; ++k) {
      SequenceOutput sample;
      sample.request_id = request_id;
      sample.sample_index = k;
      sample.finish_reason = reason;
      sample.num_prompt_tokens = aborted_.back().num_prompt_tokens;
      sample.num_cached_tokens = aborted_.back().num_cached_tokens;
      aborted_.push_back(std::move(sample));
    }
  }
}

const Sequence& Scheduler::sequence(SequenceId id) const {
  const auto it = sequences_.find(id);
  check(it != sequences_.end(), "scheduler: no sequence ", id);
  return *it->second;
}

void Scheduler::insert_in_order(Queue& queue, Sequence* seq) const {
  const auto at = std::upper_bound(
      queue.begin(), queue.end(), seq,
      [&](const Sequence* a, const Sequence* b) { return a->runs_before(*b, by_priority()); });
  queue.insert(at, seq);
}

int64_t Scheduler::num_seats_taken() const {
  int64_t seats = static_cast<int64_t>(new_children_.size());
  for (const Sequence* seq : running_) seats += seq->num_seats();
  return seats;
}

StepPlan Scheduler::schedule() {
  StepPlan plan;
  plan.finished_seq_ids = std::exchange(finished_since_plan_, {});
  unconfirmed_.emplace_back();
  int64_t budget = config_.max_num_batched_tokens;
  drafts_ = propose_drafts();
  const bool preempted = schedule_running(plan, budget);
  drafts_.clear();
  if (!preempted) {
    schedule_swapped(plan, budget);
    schedule_waiting(plan, budget);
  }
  for (Sequence* child : new_children_) insert_in_order(running_, child);
  new_children_.clear();
  if (!plan.sequences.empty()) ++stats_.num_steps;
  stats_.max_num_running = std::max(stats_.max_num_running, static_cast<int64_t>(running_.size()));
  return plan;
}

void Scheduler::drop_empty_plan(StepPlan plan) {
  check(plan.runs_nothing() && !unconfirmed_.empty() && unconfirmed_.back().empty(),
        "scheduler: only the last plan, and one that runs nothing, can be dropped");
  unconfirmed_.pop_back();
  finished_since_plan_.insert(finished_since_plan_.begin(), plan.finished_seq_ids.begin(),
                              plan.finished_seq_ids.end());
}

void Scheduler::recompute_all() {
  // The steps in flight are void: their tokens were never computed, and
  // their samples will never come.
  for (const auto& counted : unconfirmed_)
    for (const auto& [id, num_tokens] : counted) {
      const auto it = sequences_.find(id);
      if (it == sequences_.end()) continue;
      // A sequence preempted by recompute since holds its count there.
      Sequence& seq = *it->second;
      int64_t& count = seq.status == SequenceStatus::waiting ? seq.num_tokens_to_recompute
                                                             : seq.num_computed_tokens;
      count = std::max<int64_t>(0, count - num_tokens);
    }
  unconfirmed_.clear();
  for (const auto& [_, seq] : sequences_) seq->drop_pending_tokens();
  for (Queue* queue : {&running_, &swapped_}) {
    for (Sequence* seq : *queue) {
      if (drafter_) drafter_->release(seq->id);
      seq->num_step_drafts = 0;
      seq->num_tokens_to_recompute = seq->num_computed_tokens;
      seq->num_computed_tokens = 0;
      seq->status = SequenceStatus::waiting;
      insert_in_order(waiting_, seq);
    }
    queue->clear();
  }
  finished_since_plan_.clear();  // the new workers hold no state to drop
  kv_cache_.reset();
}

// Returns whether anything was preempted.
bool Scheduler::schedule_running(StepPlan& plan, int64_t& budget) {
  bool preempted = false;
  // Drafts take only blocks that no running sequence needs for its next
  // token: the free blocks beyond what those after it need.
  std::unordered_map<SequenceId, int64_t> need;
  int64_t reserve = 0;
  if (!drafts_.empty())
    for (const Sequence* seq : running_)
      if (seq->num_uncomputed_tokens() > 0 && seq->num_step_drafts == 0)
        reserve += need[seq->id] = kv_cache_.num_blocks_needed(*seq, 1);
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Sequence& seq = *running_[i];
    // A sequence verifying drafts waits for the verdict.
    const int64_t num_tokens = awaits_last_token(seq) || seq.num_step_drafts > 0
                                   ? 0
                                   : std::min(seq.num_uncomputed_tokens(), budget);
    if (num_tokens == 0) {
      ++i;
      continue;
    }
    bool preempted_itself = false;
    while (!preempted_itself && !kv_cache_.can_allocate(seq, num_tokens)) {
      Sequence& victim = *running_.back();  // last in policy order, not scheduled yet
      preempted_itself = &victim == &seq;
      preempt(victim, plan);
      preempted = true;
    }
    if (preempted_itself) break;
    if (const auto it = need.find(seq.id); it != need.end()) reserve -= it->second;
    if (const auto draft = drafts_.find(seq.id); draft != drafts_.end())
      add_drafts(seq, draft->second, budget - num_tokens, reserve);
    add_to_plan(seq, num_tokens + seq.num_draft_tokens, {}, plan);
    budget -= num_tokens + seq.num_draft_tokens;
    ++i;
  }
  return preempted;
}

void Scheduler::schedule_swapped(StepPlan& plan, int64_t& budget) {
  while (!swapped_.empty() && budget > 0) {
    Sequence& seq = *swapped_.front();
    // A parent swapped out before its prompt completed still has n - 1
    // samples to fork: it needs their seats too.
    const int64_t num_tokens = std::min(seq.num_uncomputed_tokens(), budget);
    if (num_seats_taken() + seq.num_seats() > config_.max_num_seqs ||
        !kv_cache_.can_swap_in(seq, num_tokens))
      return;
    const std::vector<BlockCopy> copies = kv_cache_.swap_in(seq);
    plan.swap_in.insert(plan.swap_in.end(), copies.begin(), copies.end());
    swapped_.pop_front();
    seq.status = SequenceStatus::running;
    insert_in_order(running_, &seq);
    if (num_tokens > 0) {
      add_to_plan(seq, num_tokens, {}, plan);
      budget -= num_tokens;
    }
  }
}

void Scheduler::schedule_waiting(StepPlan& plan, int64_t& budget) {
  while (!waiting_.empty() && budget > 0) {
    Sequence& seq = *waiting_.front();
    // Admission follows the policy's order across both queues: a newcomer
    // behind a swapped sequence must not take the blocks it needs back.
    if (!swapped_.empty() && !seq.runs_before(*swapped_.front(), by_priority())) return;
    if (num_seats_taken() + seq.num_seats() > config_.max_num_seqs) return;
    const PrefixHit hit = kv_cache_.find_cached_prefix(seq);
    const int64_t remaining = seq.num_tokens() - hit.num_tokens;
    if (!config_.enable_chunked_prefill && remaining > budget) return;
    const int64_t num_tokens = std::min(remaining, budget);
    if (!kv_cache_.can_allocate(seq, num_tokens, hit)) return;
    if (seq.num_tokens_to_recompute == 0) seq.num_cached_tokens = hit.num_tokens;
    stats_.num_tokens_recomputed +=
        std::max<int64_t>(0, seq.num_tokens_to_recompute - hit.num_tokens);
    seq.num_tokens_to_recompute = 0;
    // The runner may not know it (a worker replaced since) or know it only
    // in part (a prefix-cache hit skips prompt tokens): its next sample
    // carries its history again.
    seq.history_sent = false;
    seq.sampling_sent = false;
    waiting_.pop_front();
    seq.status = SequenceStatus::running;
    insert_in_order(running_, &seq);
    add_to_plan(seq, num_tokens, hit, plan);
    budget -= num_tokens;
  }
}

void Scheduler::add_to_plan(Sequence& seq, int64_t num_tokens, const PrefixHit& hit,
                            StepPlan& plan) {
  const std::vector<BlockCopy> copies = kv_cache_.allocate(seq, num_tokens, hit);
  plan.copy_on_write.insert(plan.copy_on_write.end(), copies.begin(), copies.end());
  seq.num_computed_tokens += hit.num_tokens;
  ScheduledSequence scheduled;
  scheduled.seq_id = seq.id;
  scheduled.num_computed_tokens = seq.num_computed_tokens;
  const auto first = seq.token_ids.begin() + seq.num_computed_tokens;
  scheduled.token_ids.assign(first, first + num_tokens);
  BlockTableUpdate update = kv_cache_.take_update(seq.id);
  scheduled.num_kept_blocks = update.num_kept_blocks;
  scheduled.new_block_ids = std::move(update.new_block_ids);
  scheduled.needs_logits = seq.num_computed_tokens + num_tokens == seq.num_tokens();
  scheduled.num_draft_tokens = static_cast<int32_t>(seq.num_draft_tokens);
  plan.sequences.push_back(std::move(scheduled));
  // Counted as computed now, so the next plan can follow this one at once.
  seq.num_computed_tokens += num_tokens;
  unconfirmed_.back().emplace_back(seq.id, num_tokens);
  if (!plan.sequences.back().needs_logits) return;
  const size_t index = plan.sequences.size() - 1;
  SamplingParams sampling = seq.request->sampling;
  sampling.seed = *sampling.seed + static_cast<uint64_t>(seq.sample_index);
  plan.samples.push_back(
      {seq.id, index, std::nullopt, seq.request->return_logits, seq.num_output_tokens(), {}});
  if (!seq.sampling_sent) {
    plan.samples.back().sampling = sampling;
    seq.sampling_sent = true;
  }
  if (seq.num_draft_tokens > 0) {
    const auto drafts = seq.token_ids.end() - seq.num_draft_tokens;
    plan.samples.back().draft_token_ids.assign(drafts, seq.token_ids.end());
    plan.samples.back().draft_probs = std::move(draft_probs_);
  }
  draft_probs_.clear();
  if (sampling.has_penalties() && !seq.history_sent) {
    // Known tokens only: a pending one is this run's last, which the runner
    // resolves to its own sample.
    const auto prompt_end = seq.token_ids.begin() + seq.num_prompt_tokens;
    plan.samples.back().history =
        TokenHistory{{seq.token_ids.begin(), prompt_end},
                     {prompt_end, seq.token_ids.begin() + seq.num_known_tokens()}};
    seq.history_sent = true;
  }
  seq.token_ids.push_back(kPendingToken);
  ++seq.num_pending_tokens;
  if (!seq.forked && seq.request->n > 1) fork_children(seq, index, plan);
}

void Scheduler::fork_children(Sequence& parent, size_t scheduled_index, StepPlan& plan) {
  const ScheduledSequence& scheduled = plan.sequences[scheduled_index];
  for (int k = 1; k < parent.request->n; ++k) {
    auto child = std::make_unique<Sequence>(next_seq_id_++, parent.request, parent.arrival);
    child->sample_index = k;
    child->forked = true;
    child->status = SequenceStatus::running;
    // Its prompt is computed by the parent's run in this very step.
    child->num_computed_tokens =
        scheduled.num_computed_tokens + static_cast<int64_t>(scheduled.token_ids.size());
    child->num_cached_tokens = parent.num_cached_tokens;
    unconfirmed_.back().emplace_back(child->id, child->num_computed_tokens);
    child->token_ids.push_back(kPendingToken);  // sampled in this step, like the parent's
    child->num_pending_tokens = 1;
    kv_cache_.fork(parent.id, child->id);
    SamplingParams sampling = parent.request->sampling;
    sampling.seed = *sampling.seed + static_cast<uint64_t>(k);
    plan.samples.push_back(
        {child->id, scheduled_index, sampling, parent.request->return_logits, 0, {}});
    child->sampling_sent = true;
    if (sampling.has_penalties()) {
      plan.samples.back().history = TokenHistory{parent.request->prompt_token_ids, {}};
      child->history_sent = true;
    }
    new_children_.push_back(child.get());
    track(std::move(child));
  }
  parent.forked = true;
}

bool Scheduler::should_swap(const Sequence& victim) const {
  if (config_.preemption_mode == PreemptionMode::recompute || !kv_cache_.can_swap_out(victim.id))
    return false;
  if (config_.preemption_mode == PreemptionMode::swap) return true;
  const double recompute_cost =
      static_cast<double>(victim.num_computed_tokens) * config_.recompute_seconds_per_token;
  const double swap_cost =
      static_cast<double>(kv_cache_.num_held_blocks(victim.id)) * config_.swap_seconds_per_block;
  return swap_cost < recompute_cost;
}

void Scheduler::preempt(Sequence& victim, StepPlan& plan) {
  running_.erase(std::find(running_.begin(), running_.end(), &victim));
  if (should_swap(victim)) {
    const std::vector<BlockCopy> copies = kv_cache_.swap_out(victim.id);
    plan.swap_out.insert(plan.swap_out.end(), copies.begin(), copies.end());
    victim.status = SequenceStatus::swapped;
    insert_in_order(swapped_, &victim);
    ++stats_.num_preemptions_swap;
    return;
  }
  kv_cache_.free(victim.id);
  if (drafter_) drafter_->release(victim.id);
  victim.num_tokens_to_recompute = victim.num_computed_tokens;
  victim.num_computed_tokens = 0;
  victim.status = SequenceStatus::waiting;
  insert_in_order(waiting_, &victim);  // ahead of every later arrival
  ++stats_.num_preemptions_recompute;
}

bool Scheduler::awaits_last_token(const Sequence& seq) const {
  // Its pending token is its last (max_tokens); computing it would be waste.
  return seq.num_pending_tokens > 0 && seq.num_output_tokens() >= seq.request->stop.max_tokens;
}

std::vector<SequenceOutput> Scheduler::update(std::span<const SampledToken> sampled,
                                              std::vector<size_t>* appended) {
  check(!unconfirmed_.empty(), "scheduler: update() without a plan to update");
  unconfirmed_.pop_front();
  std::vector<SequenceOutput> finished = std::exchange(aborted_, {});
  for (const SampledToken& token : sampled) {
    const auto it = sequences_.find(token.seq_id);
    if (it == sequences_.end()) continue;  // finished or aborted since the plan was made
    Sequence& seq = *it->second;
    check(seq.num_pending_tokens > 0, "scheduler: a token for sequence ", seq.id,
          ", which awaits none (results must come back in the order of their plans)");
    if (!token.error.empty()) {
      finished.push_back(finish(seq, FinishReason::aborted));
      finished.back().error = token.error;
      continue;
    }
    if (token.accepted_draft) {
      accept_draft(seq, token.token);
    } else {
      reject_drafts(seq);  // those not accepted before this token
      // The oldest pending token is this step's.
      seq.token_ids[static_cast<size_t>(seq.num_known_tokens())] = token.token;
      --seq.num_pending_tokens;
    }
    const int64_t at = seq.num_known_tokens() - 1;
    if (appended) appended->push_back(static_cast<size_t>(&token - sampled.data()));
    if (!token.logits.empty()) seq.logits.push_back(token.logits);
    if (token.logprobs) seq.logprobs.push_back(*token.logprobs);
    kv_cache_.cache_computed_blocks(seq);  // a block it completed may be cached now
    const std::span<const int32_t> output =
        std::span<const int32_t>(seq.token_ids)
            .subspan(static_cast<size_t>(seq.num_prompt_tokens),
                     static_cast<size_t>(at + 1 - seq.num_prompt_tokens));
    const FinishReason reason = check_stop(seq.request->stop, config_.eos_token_ids, output);
    if (reason != FinishReason::none) finished.push_back(finish(seq, reason));
  }
  return finished;
}

SequenceOutput Scheduler::finish(Sequence& seq, FinishReason reason) {
  if (kv_cache_.has_blocks(seq.id)) kv_cache_.free(seq.id);
  if (drafter_) drafter_->release(seq.id);
  seq.drop_pending_tokens();  // a step planned after this one samples in vain
  for (Queue* queue : {&waiting_, &running_, &swapped_}) {
    const auto it = std::find(queue->begin(), queue->end(), &seq);
    if (it != queue->end()) queue->erase(it);
  }
  finished_since_plan_.push_back(seq.id);
  SequenceOutput out;
  out.request_id = seq.request->id;
  out.sample_index = seq.sample_index;
  const std::span<const int32_t> generated = seq.output_token_ids();
  out.token_ids.assign(generated.begin(), generated.end());
  out.finish_reason = reason;
  out.num_prompt_tokens = seq.num_prompt_tokens;
  out.num_cached_tokens = seq.num_cached_tokens;
  out.logits = std::move(seq.logits);
  out.logprobs = std::move(seq.logprobs);
  out.num_draft_tokens = seq.spec_draft_tokens;
  out.num_accepted_tokens = seq.spec_accepted_tokens;
  out.num_judged_draft_tokens = seq.spec_judged_tokens;
  const SequenceId id = seq.id;
  const auto samples = by_request_.find(out.request_id);
  std::erase(samples->second, id);
  if (samples->second.empty()) by_request_.erase(samples);
  sequences_.erase(id);  // seq is gone from here on
  return out;
}

}  // namespace hive
