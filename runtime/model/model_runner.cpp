#include "runtime/model/model_runner.hpp"

#include <algorithm>

#include "base/error.hpp"
#include "runtime/model/logprobs.hpp"

namespace hive {

// A run's last token may be pending (see sequence.hpp): the token this
// runner sampled for the sequence in the step before.
std::span<const int32_t> ModelRunner::resolve(const ScheduledSequence& s) {
  const std::vector<int32_t>& ids = s.token_ids;
  if (ids.empty() || ids.back() != kPendingToken) return ids;
  check(std::find(ids.begin(), ids.end() - 1, kPendingToken) == ids.end() - 1,
        "model runner: sequence ", s.seq_id, " has a pending token before its last");
  const auto it = last_sampled_.find(s.seq_id);
  check(it != last_sampled_.end(), "model runner: sequence ", s.seq_id,
        " has a pending token but sampled none in an earlier step");
  resolved_.assign(ids.begin(), ids.end());
  resolved_.back() = it->second;
  return resolved_;
}

// The slot's history lacks the token pending when it was planned: this
// run's last, which this runner sampled in the step before (a forked child's
// first sample shares its parent's run and has none pending).
void ModelRunner::set_history(Sampler& sampler, const SampleSlot& slot,
                              const ScheduledSequence& run) {
  const TokenHistory& history = *slot.history;
  if (run.seq_id != slot.seq_id || run.token_ids.empty() || run.token_ids.back() != kPendingToken) {
    sampler.set_history(history.prompt_token_ids, history.output_token_ids);
    return;
  }
  resolved_.assign(history.output_token_ids.begin(), history.output_token_ids.end());
  resolved_.push_back(last_sampled_.at(slot.seq_id));
  sampler.set_history(history.prompt_token_ids, resolved_);
}

// A sequence's parameters come with its first sample after admission; a
// sampler kept from before (a preempted sequence readmitted) goes on with
// its stream.
Sampler& ModelRunner::sampler_for(const SampleSlot& slot) {
  const auto it = samplers_.find(slot.seq_id);
  if (it != samplers_.end()) return it->second;
  check(slot.sampling.has_value(), "model runner: sequence ", slot.seq_id,
        " samples before its sampling parameters came");
  return samplers_.try_emplace(slot.seq_id, *slot.sampling, slot.num_sampled).first->second;
}

std::vector<SampledToken> ModelRunner::run(const StepPlan& plan) {
  for (const SequenceId id : plan.finished_seq_ids) {
    samplers_.erase(id);
    last_sampled_.erase(id);
  }
  tables_.apply(plan);
  cache_.swap_out(plan.swap_out);
  cache_.swap_in(plan.swap_in);
  cache_.copy_blocks(plan.copy_on_write);
  if (plan.sequences.empty()) {
    if (ep_) model_.forward_idle(*ep_);
    return {};
  }

  ForwardBatch batch;
  std::vector<int64_t> logits_row(plan.sequences.size(), -1);
  for (size_t i = 0; i < plan.sequences.size(); ++i) {
    const ScheduledSequence& s = plan.sequences[i];
    const int32_t last =
        batch.add_run(s.num_computed_tokens, resolve(s), tables_.at(s.seq_id), cache_.block_size());
    if (!s.needs_logits) continue;
    // A run with drafts needs the logits at each draft's position and one after.
    logits_row[i] = static_cast<int64_t>(batch.logits_rows.size());
    for (int32_t d = s.num_draft_tokens; d >= 0; --d) batch.logits_rows.push_back(last - d);
  }
  const int64_t vocab = model_.config().vocab_size;
  const auto rows = static_cast<int64_t>(batch.logits_rows.size());
  logits_.resize(static_cast<size_t>(rows * vocab));
  model_.forward(batch, cache_, Tensor::view(logits_.data(), DType::f32, {rows, vocab}), ep_);

  std::vector<SampledToken> sampled;
  for (const SampleSlot& slot : plan.samples) {
    const int64_t row = logits_row.at(slot.scheduled_index);
    check(row >= 0, "model runner: sample slot for sequence ", slot.seq_id,
          " points at a run without logits");
    Sampler& sampler = sampler_for(slot);
    if (slot.history) set_history(sampler, slot, plan.sequences[slot.scheduled_index]);
    if (!slot.draft_token_ids.empty()) {
      verify(sampler, slot, plan.sequences[slot.scheduled_index], row, sampled);
      continue;
    }
    const std::span<const float> row_logits(logits_.data() + row * vocab,
                                            static_cast<size_t>(vocab));
    SampledToken token{slot.seq_id, -1, {}, {}, {}};
    try {
      token.token = sampler.sample(row_logits);
      if (sampler.params().logprobs)
        token.logprobs = compute_logprobs(row_logits, token.token, *sampler.params().logprobs);
    } catch (const Error& e) {
      // This sequence's logits are unusable; the batch's others are not.
      token.error = e.what();
    }
    if (slot.return_logits) token.logits.assign(row_logits.begin(), row_logits.end());
    // A sequence that could not be sampled ends when its result comes back,
    // but a step planned meanwhile may feed its pending token: any valid id
    // keeps that step (and the batch) running; its output is dropped.
    last_sampled_[slot.seq_id] = token.error.empty() ? token.token : 0;
    sampled.push_back(std::move(token));
  }
  return sampled;
}

void ModelRunner::verify(Sampler& sampler, const SampleSlot& slot, const ScheduledSequence& run,
                         int64_t first_row, std::vector<SampledToken>& sampled) {
  const auto vocab = static_cast<size_t>(model_.config().vocab_size);
  const size_t gamma = slot.draft_token_ids.size();
  check(static_cast<size_t>(run.num_draft_tokens) == gamma && run.seq_id == slot.seq_id,
        "model runner: sequence ", slot.seq_id, " verifies ", gamma, " drafts but its run has ",
        run.num_draft_tokens);
  const std::span<const float> rows(logits_.data() + first_row * static_cast<int64_t>(vocab),
                                    (gamma + 1) * vocab);
  Verified verified;
  try {
    verified = sampler.verify(rows, vocab, slot.draft_token_ids, slot.draft_probs);
  } catch (const Error& e) {
    // As in run(): this sequence fails, the batch goes on.
    sampled.push_back({slot.seq_id, -1, {}, e.what(), {}});
    last_sampled_[slot.seq_id] = 0;
    return;
  }
  for (size_t i = 0; i < verified.tokens.size(); ++i) {
    const std::span<const float> row = rows.subspan(i * vocab, vocab);
    SampledToken token{slot.seq_id, verified.tokens[i], {}, {}, {}};
    token.accepted_draft = static_cast<int>(i) < verified.num_accepted;
    if (sampler.params().logprobs)
      token.logprobs = compute_logprobs(row, token.token, *sampler.params().logprobs);
    if (slot.return_logits) token.logits.assign(row.begin(), row.end());
    sampled.push_back(std::move(token));
  }
  last_sampled_[slot.seq_id] = verified.tokens.back();
}

}  // namespace hive
