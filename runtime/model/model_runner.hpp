#pragma once
// ModelRunner: executes a StepPlan on a model, the worker's half of a step.
// It runs the plan's block copies (swap out, swap in, copy-on-write), one
// forward pass over every scheduled token, then samples each slot from its
// logits row. Samplers live here between steps, keyed by sequence, so a
// seeded sequence draws the same numbers however it is batched or preempted,
// and so does each sequence's last sampled token, which stands in for a
// pending token (see sequence.hpp), and each sequence's block table, which
// plans only update (BlockTables); the plan's finished_seq_ids drop all three.
// A sampler with penalties counts the sequence's tokens: a slot's
// TokenHistory sets them, its own samples add to them.
#include <span>
#include <unordered_map>
#include <vector>

#include "runtime/model/model.hpp"
#include "runtime/model/paged_kv_cache.hpp"
#include "runtime/model/sampling.hpp"
#include "runtime/core/block_tables.hpp"
#include "runtime/core/scheduler.hpp"

namespace hive {

class ModelRunner {
 public:
  // Model and cache must outlive the runner.
  ModelRunner(Model& model, PagedKVCache& cache) : model_(model), cache_(cache) {}

  // With a context, MoE layers run expert-parallel and a plan without
  // sequences still joins the collectives (Model::forward_idle). The context
  // must outlive its use; nullptr turns it off.
  void set_expert_parallel(const ExpertParallelContext* ep) { ep_ = ep; }

  std::vector<SampledToken> run(const StepPlan& plan);
  // Sequences whose block tables the runner holds.
  size_t num_block_tables() const { return tables_.size(); }

 private:
  // The run's token ids, its pending token replaced (valid until the next call).
  std::span<const int32_t> resolve(const ScheduledSequence& s);
  Sampler& sampler_for(const SampleSlot& slot);
  void set_history(Sampler& sampler, const SampleSlot& slot, const ScheduledSequence& run);
  // Speculation: the slot's drafts against the logits rows from first_row;
  // appends the accepted drafts and the token after them.
  void verify(Sampler& sampler, const SampleSlot& slot, const ScheduledSequence& run,
              int64_t first_row, std::vector<SampledToken>& sampled);

  Model& model_;
  PagedKVCache& cache_;
  const ExpertParallelContext* ep_ = nullptr;
  std::unordered_map<SequenceId, Sampler> samplers_;
  std::unordered_map<SequenceId, int32_t> last_sampled_;
  BlockTables tables_;
  std::vector<int32_t> resolved_;  // resolve()'s and set_history()'s copies
  std::vector<float> logits_;
};

}  // namespace hive
