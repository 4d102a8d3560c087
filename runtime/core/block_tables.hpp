#pragma once
// BlockTables: the worker's copy of each running sequence's block table.
// The scheduler's KVCacheManager owns the tables; a plan carries only how
// each planned sequence's table changed since its last run (ScheduledSequence
// ::num_kept_blocks, new_block_ids), and a worker applying every plan in
// order holds the same tables without them ever being sent whole twice:
//
//   held [ 7 | 2 ]   update keep 2, new [9]   ->  [ 7 | 2 | 9 ]   (grew)
//   held [ 7 | 2 ]   update keep 1, new [5]   ->  [ 7 | 5 ]       (copy-on-write)
//   held [ 7 | 2 ]   update keep 0, new [3 4] ->  [ 3 | 4 ]       (swap-in, readmitted)
#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "runtime/core/scheduler.hpp"

namespace hive {

class BlockTables {
 public:
  // Drops the plan's finished sequences, then applies each run's update.
  // Throws hive::Error for an update that keeps more blocks than are held
  // (an update whose base never arrived) or leaves a table empty.
  void apply(const StepPlan& plan);
  // The table of a sequence the last plans ran; valid until the next apply.
  std::span<const int32_t> at(SequenceId seq) const;
  size_t size() const { return tables_.size(); }

 private:
  std::unordered_map<SequenceId, std::vector<int32_t>> tables_;
};

}  // namespace hive
