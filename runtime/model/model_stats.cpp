#include "runtime/model/model_stats.hpp"

namespace hive {

ModelStats model_stats(const ModelConfig& config, const WeightStore& store) {
  ModelStats stats;
  for (const auto& [name, tensor] : store.tensors()) {
    // Weights are float or a GGUF's quantized blocks; integer tensors are not.
    if (!is_float(tensor.dtype) && !is_quantized(tensor.dtype) && tensor.dtype != DType::f8_e4m3)
      continue;
    // A tied checkpoint may still carry a copy of the embedding as lm_head.
    if (config.tie_word_embeddings && name == "lm_head.weight") continue;
    stats.weight_bytes += static_cast<int64_t>(tensor.nbytes());
    // DeepSeek's router bias is a buffer set by load balancing, not a
    // trained parameter (transformers does not count it either).
    if (name.ends_with("e_score_correction_bias")) continue;
    stats.total_parameters += tensor.numel();
  }
  stats.active_parameters = stats.total_parameters;
  const int64_t per_expert = 3 * config.hidden_size * config.moe_intermediate_size;
  for (int64_t layer = 0; layer < config.num_layers; ++layer)
    if (config.is_moe_layer(layer))
      stats.active_parameters -= (config.num_experts - config.num_experts_per_token) * per_expert;
  return stats;
}

}  // namespace hive
