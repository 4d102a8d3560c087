#pragma once
// Rotary-embedding inverse frequencies for a model config (default, linear,
// llama3 and YaRN scaling), computed as transformers computes them.
#include <vector>

#include "runtime/loader/model_config.hpp"

namespace hive {

std::vector<float> rope_inv_freq(const RopeConfig& rope, int64_t head_dim);

// The factor transformers multiplies cos and sin by (YaRN's mscale ratio;
// 1 for the other types).
double rope_attention_factor(const RopeConfig& rope);

// YaRN's mscale: 0.1 * mscale * ln(factor) + 1 for factor > 1, else 1.
double yarn_mscale(double factor, double mscale);

}  // namespace hive
