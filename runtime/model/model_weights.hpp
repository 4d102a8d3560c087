#pragma once
// The tensors of a decoder, bound by their Hugging Face names and checked
// against the config's shapes. Views into the checkpoint; nothing is copied.
// The matrices only matmuls and the embedding read (projections, experts,
// routers, embedding, lm_head) may be quantized (a GGUF's blocks) or, but
// for the embedding, f8_e4m3 with block scales (an FP8 checkpoint's); MLA's
// projections may be f8_e4m3 too; norms and biases must be f32, f16 or bf16.
#include <optional>
#include <vector>

#include "moe/ffn.hpp"
#include "runtime/loader/model_config.hpp"
#include "runtime/loader/weight_store.hpp"
#include "runtime/model/mla_attention.hpp"

namespace hive {

struct AttentionWeights {
  std::optional<MlaWeights> mla;  // DeepSeek: latent attention, no q/k/v_proj
  Tensor q_proj, k_proj, v_proj, o_proj;
  std::optional<Tensor> q_bias, k_bias, v_bias, o_bias;
  std::optional<Tensor> q_norm, k_norm;  // [head_dim], Qwen3 family
};

struct LayerWeights {
  Tensor input_norm;
  Tensor post_attention_norm;
  AttentionWeights attention;
  bool is_moe = false;
  FfnWeights mlp;  // dense layers
  MoeWeights moe;  // MoE layers
};

struct ModelWeights {
  Tensor embed_tokens;  // [vocab, hidden]
  std::vector<LayerWeights> layers;
  Tensor final_norm;  // [hidden]
  Tensor lm_head;     // [vocab, hidden]; the embedding when tied
};

ModelWeights bind_weights(const ModelConfig& config, const WeightStore& store);

}  // namespace hive
