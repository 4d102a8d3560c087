#pragma once
// StepAttentionPlan: builds a step's AttentionPlan on the host from its
// sequences, checks it once (every block id against the pool, every context
// against its table) and copies it to the backend once; every layer's
// paged_attention then reads plan() without checking the tables again.
#include <cstdint>
#include <span>

#include "kernels/attention_plan.hpp"
#include "kernels/buffer.hpp"

namespace hive {

// One sequence of a step: its queries are the next num_queries rows of q,
// the last at position context_len - 1; the table covers its context.
struct PlannedSequence {
  int64_t num_queries = 0;
  int64_t context_len = 0;
  std::span<const int32_t> block_table;
};

class StepAttentionPlan {
 public:
  // Throws hive::Error naming the sequence and the entry that is wrong.
  StepAttentionPlan(Backend& backend, std::span<const PlannedSequence> sequences,
                    int64_t num_blocks, int64_t block_size);

  const AttentionPlan& plan() const { return plan_; }

 private:
  Buffer query_start_, context_lens_, table_start_, block_tables_;
  AttentionPlan plan_;
};

}  // namespace hive
