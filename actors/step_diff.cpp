#include "actors/step_diff.hpp"

#include <algorithm>

#include "kernels/error.hpp"

namespace hive {

WorkerStep PlanEncoder::encode(const StepPlan& plan, int64_t step_id) {
  WorkerStep step;
  step.step_id = step_id;
  for (const SequenceId id : plan.finished_seq_ids) sent_tables_.erase(id);
  for (const ScheduledSequence& s : plan.sequences) {
    StepSequence out;
    out.seq_id = s.seq_id;
    out.num_computed_tokens = s.num_computed_tokens;
    out.token_ids = s.token_ids;
    out.needs_logits = s.needs_logits;
    out.num_draft_tokens = s.num_draft_tokens;
    std::vector<int32_t>& sent = sent_tables_[s.seq_id];
    const bool extends = sent.size() <= s.block_table.size() &&
                         std::equal(sent.begin(), sent.end(), s.block_table.begin());
    out.replace_table = !extends;
    const size_t first_new = extends ? sent.size() : 0;
    out.new_blocks.assign(s.block_table.begin() + static_cast<std::ptrdiff_t>(first_new),
                          s.block_table.end());
    sent = s.block_table;
    step.sequences.push_back(std::move(out));
  }
  step.samples = plan.samples;
  step.swap_out = plan.swap_out;
  step.swap_in = plan.swap_in;
  step.copy_on_write = plan.copy_on_write;
  step.finished_seq_ids = plan.finished_seq_ids;
  return step;
}

StepPlan PlanDecoder::decode(const WorkerStep& step) {
  StepPlan plan;
  for (const SequenceId id : step.finished_seq_ids) tables_.erase(id);
  for (const StepSequence& s : step.sequences) {
    std::vector<int32_t>& table = tables_[s.seq_id];
    if (s.replace_table) table.clear();
    table.insert(table.end(), s.new_blocks.begin(), s.new_blocks.end());
    check(!table.empty(), "step ", step.step_id, ": sequence ", s.seq_id,
          " has no block table (a diff arrived without its base)");
    plan.sequences.push_back(
        {s.seq_id, s.num_computed_tokens, s.token_ids, table, s.needs_logits, s.num_draft_tokens});
  }
  plan.samples = step.samples;
  plan.swap_out = step.swap_out;
  plan.swap_in = step.swap_in;
  plan.copy_on_write = step.copy_on_write;
  plan.finished_seq_ids = step.finished_seq_ids;
  return plan;
}

}  // namespace hive
