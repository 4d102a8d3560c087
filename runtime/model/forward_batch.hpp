#pragma once
// ForwardBatch: the tokens of several sequences run in one forward pass.
// Their runs are concatenated, so every matmul sees all tokens at once;
// attention then runs over all of them in one op per layer, reading the
// step's AttentionPlan (kernels/attention_plan.hpp) built from the runs.
//
//   runs:          seq A (prefill chunk)  | seq B (decode) | seq C (prompt)
//   token_ids      a8 a9 a10 a11          | b40            | c0 c1 c2
//   positions      8  9  10  11           | 40             | 0  1  2
//   slot_mapping   where each token's K/V is written:
//                  table[pos / block_size] * block_size + pos % block_size
//   logits_rows    the tokens whose logits are wanted, e.g. [3, 4, 7]
#include <cstdint>
#include <span>
#include <vector>

namespace hive {

struct SequenceRun {
  int64_t first_token = 0;  // index into token_ids
  int64_t num_tokens = 0;
  int64_t start_position = 0;  // tokens of the sequence already in the cache
  std::span<const int32_t> block_table;  // the caller's, which must outlive the batch
};

struct ForwardBatch {
  std::vector<int32_t> token_ids;
  std::vector<int32_t> positions;
  std::vector<int64_t> slot_mapping;
  std::vector<SequenceRun> runs;
  std::vector<int32_t> logits_rows;

  // Appends a run of `tokens` at positions start_position...; the table
  // must cover them and outlive the batch (the batch keeps a view of it,
  // not a copy). Returns the index of the run's last token.
  int32_t add_run(int64_t start_position, std::span<const int32_t> tokens,
                  std::span<const int32_t> block_table, int32_t block_size);
  int64_t num_tokens() const { return static_cast<int64_t>(token_ids.size()); }
};

}  // namespace hive
