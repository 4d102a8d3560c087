#include "runtime/model/forward_batch.hpp"

#include "base/error.hpp"

namespace hive {

int32_t ForwardBatch::add_run(int64_t start_position, std::span<const int32_t> tokens,
                              std::span<const int32_t> block_table, int32_t block_size) {
  const auto count = static_cast<int64_t>(tokens.size());
  check(count >= 1 && start_position >= 0, "forward batch: a run needs >= 1 token at a position ",
        ">= 0 (got ", count, " at ", start_position, ")");
  check(start_position + count <= static_cast<int64_t>(block_table.size()) * block_size,
        "forward batch: positions up to ", start_position + count, " need more than the ",
        block_table.size(), " blocks of ", block_size, " in the block table");
  SequenceRun run;
  run.first_token = num_tokens();
  run.num_tokens = count;
  run.start_position = start_position;
  run.block_table = block_table;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t position = start_position + i;
    const int32_t block = block_table[static_cast<size_t>(position / block_size)];
    check(block > 0, "forward batch: position ", position, " maps to the null block");
    token_ids.push_back(tokens[static_cast<size_t>(i)]);
    positions.push_back(static_cast<int32_t>(position));
    slot_mapping.push_back(int64_t{block} * block_size + position % block_size);
  }
  runs.push_back(std::move(run));
  return static_cast<int32_t>(num_tokens() - 1);
}

}  // namespace hive
