#include "kernels/step_attention_plan.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include "base/error.hpp"

namespace hive {

StepAttentionPlan::StepAttentionPlan(Backend& backend, std::span<const PlannedSequence> sequences,
                                     int64_t num_blocks, int64_t block_size) {
  check(num_blocks >= 1 && block_size >= 1, "attention plan: need a pool of >= 1 block of >= 1 ",
        "token (got ", num_blocks, " blocks of ", block_size, ")");
  constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();
  std::vector<int32_t> query_start = {0}, context_lens, table_start = {0}, tables;
  int64_t num_tokens = 0, max_context_len = 0, pairs = 0;
  for (size_t s = 0; s < sequences.size(); ++s) {
    const PlannedSequence& seq = sequences[s];
    const auto table_len = static_cast<int64_t>(seq.block_table.size());
    check(seq.num_queries >= 1 && seq.context_len >= seq.num_queries &&
              seq.context_len <= table_len * block_size,
          "attention plan: sequence ", s, " has ", seq.num_queries, " queries and a context of ",
          seq.context_len, " tokens; expected >= 1 query, within a context its table of ",
          table_len, " blocks of ", block_size, " covers");
    for (int64_t b = 0; b < table_len; ++b) {
      const int32_t id = seq.block_table[static_cast<size_t>(b)];
      check(id >= 0 && id < num_blocks, "attention plan: sequence ", s, ": block table entry ", b,
            " is ", id, ", expected a block id in [0, ", num_blocks, ")");
    }
    num_tokens += seq.num_queries;
    max_context_len = std::max(max_context_len, seq.context_len);
    pairs += seq.num_queries * seq.context_len;
    tables.insert(tables.end(), seq.block_table.begin(), seq.block_table.end());
    check(num_tokens <= kMaxIndex && static_cast<int64_t>(tables.size()) <= kMaxIndex &&
              seq.context_len <= kMaxIndex,
          "attention plan: more than 2^31 queries, table entries or positions");
    query_start.push_back(static_cast<int32_t>(num_tokens));
    context_lens.push_back(static_cast<int32_t>(seq.context_len));
    table_start.push_back(static_cast<int32_t>(tables.size()));
  }
  query_start_ = upload<int32_t>(backend, query_start, DType::i32);
  context_lens_ = upload<int32_t>(backend, context_lens, DType::i32);
  table_start_ = upload<int32_t>(backend, table_start, DType::i32);
  block_tables_ = upload<int32_t>(backend, tables, DType::i32);
  plan_.query_start = query_start_.tensor();
  plan_.context_lens = context_lens_.tensor();
  plan_.table_start = table_start_.tensor();
  plan_.block_tables = block_tables_.tensor();
  plan_.num_seqs = static_cast<int64_t>(sequences.size());
  plan_.num_tokens = num_tokens;
  plan_.max_context_len = max_context_len;
  plan_.query_key_pairs = pairs;
  plan_.num_blocks = num_blocks;
  plan_.block_size = block_size;
}

}  // namespace hive
