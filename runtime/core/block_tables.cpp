#include "runtime/core/block_tables.hpp"

#include "base/error.hpp"

namespace hive {

void BlockTables::apply(const StepPlan& plan) {
  for (const SequenceId id : plan.finished_seq_ids) tables_.erase(id);
  for (const ScheduledSequence& s : plan.sequences) {
    std::vector<int32_t>& table = tables_[s.seq_id];
    const auto kept = static_cast<size_t>(s.num_kept_blocks);
    check(s.num_kept_blocks >= 0 && kept <= table.size(), "block tables: sequence ", s.seq_id,
          " keeps ", s.num_kept_blocks, " blocks of the ", table.size(), " held");
    table.resize(kept);
    table.insert(table.end(), s.new_block_ids.begin(), s.new_block_ids.end());
    check(!table.empty(), "block tables: sequence ", s.seq_id, " runs with no blocks");
  }
}

std::span<const int32_t> BlockTables::at(SequenceId seq) const {
  const auto it = tables_.find(seq);
  check(it != tables_.end(), "block tables: sequence ", seq, " has no table");
  return it->second;
}

}  // namespace hive
