#pragma once
// Parameter and byte counts of a checkpoint, for `hive inspect` and the
// memory ledger.
#include <cstdint>

#include "runtime/loader/model_config.hpp"
#include "runtime/loader/weight_store.hpp"

namespace hive {

struct ModelStats {
  int64_t total_parameters = 0;
  // What one token touches: everything but the experts it is not routed to.
  int64_t active_parameters = 0;
  int64_t weight_bytes = 0;
};

ModelStats model_stats(const ModelConfig& config, const WeightStore& store);

}  // namespace hive
