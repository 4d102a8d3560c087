#pragma once
// Rotary-embedding inverse frequencies for a model config (default, linear
// and llama3 scaling), computed as transformers computes them.
#include <vector>

#include "runtime/model/model_config.hpp"

namespace hive {

std::vector<float> rope_inv_freq(const RopeConfig& rope, int64_t head_dim);

}  // namespace hive
