#pragma once
// AttentionPlan: where each sequence of a step finds its queries and its K/V,
// as flat arrays on the backend (FlashInfer's plan/run: built once per step,
// read by every layer's paged attention). A plain struct of views; who owns
// the arrays and how they were checked is step_attention_plan.hpp.
//
//   step:          s0: prefill chunk  | s1: decode | s2: prompt
//   query_start    0                  4            5            8  [num_seqs + 1]
//   context_lens   12                 41           3               [num_seqs]
//   table_start    0                  3            6            7  [num_seqs + 1]
//   block_tables   [ 7  2  9 | 4  8  1 | 5 ]                       block_size 16
//
// Sequence s's queries are rows query_start[s]..query_start[s + 1] of q;
// the last of them sits at position context_lens[s] - 1. Its table is
// block_tables[table_start[s]..table_start[s + 1]].
#include <cstdint>

#include "kernels/tensor.hpp"

namespace hive {

struct AttentionPlan {
  Tensor query_start;   // [num_seqs + 1] i32
  Tensor context_lens;  // [num_seqs] i32
  Tensor table_start;   // [num_seqs + 1] i32
  Tensor block_tables;  // [table_start[num_seqs]] i32
  int64_t num_seqs = 0;
  int64_t num_tokens = 0;       // query_start[num_seqs]
  int64_t max_context_len = 0;  // over the sequences
  // Sum over sequences of queries x context: the step's attention work per
  // head and head_dim element, for deciding whether to use threads.
  int64_t query_key_pairs = 0;
  // The pool every block id was checked against.
  int64_t num_blocks = 0;
  int64_t block_size = 0;
};

}  // namespace hive
