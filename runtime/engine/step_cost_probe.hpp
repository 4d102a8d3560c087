#pragma once
// Measures what a forward pass of n tokens costs a model on its backend, for
// speculative decoding's load-aware control (runtime/core/spec_cost.hpp):
// n = 1, 2, 4, ... up to max_tokens, one run of n tokens in a scratch KV
// cache, the fastest of a few tries each.
#include <cstdint>

#include "runtime/core/spec_cost.hpp"
#include "runtime/model/model.hpp"

namespace hive {

StepCost measure_step_cost(Model& model, DType kv_cache_dtype, int64_t max_tokens = 64);
// The target's costs and, when there is one, the draft model's.
SpecCostModel measure_spec_cost(Model& target, Model* draft, DType kv_cache_dtype);

}  // namespace hive
