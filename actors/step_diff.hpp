#pragma once
// Step plans as diffs. The scheduler side (PlanEncoder) turns a StepPlan into
// a WorkerStep that carries only new token ids and new block ids; the worker
// side (PlanDecoder) keeps each sequence's block table and rebuilds the full
// StepPlan for its ModelRunner. Both drop a sequence's table when the plan
// lists it as finished, so the two copies stay equal step after step.
#include <unordered_map>
#include <vector>

#include "actors/messages.hpp"

namespace hive {

class PlanEncoder {
 public:
  WorkerStep encode(const StepPlan& plan, int64_t step_id);
  // Forgets every table (the workers restarted with empty state).
  void reset() { sent_tables_.clear(); }

 private:
  std::unordered_map<SequenceId, std::vector<int32_t>> sent_tables_;
};

class PlanDecoder {
 public:
  StepPlan decode(const WorkerStep& step);
  size_t num_tables() const { return tables_.size(); }

 private:
  std::unordered_map<SequenceId, std::vector<int32_t>> tables_;
};

}  // namespace hive
