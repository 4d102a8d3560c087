#include "runtime/model/model_weights.hpp"

#include <string>

#include "base/error.hpp"

namespace hive {

namespace {

FfnWeights bind_ffn(const WeightStore& store, const std::string& prefix, int64_t hidden,
                    int64_t inter, const char* gate, const char* up, const char* down) {
  return {store.get_matrix(prefix + gate + ".weight", {inter, hidden}),
          store.get_matrix(prefix + up + ".weight", {inter, hidden}),
          store.get_matrix(prefix + down + ".weight", {hidden, inter})};
}

// An MLA projection: float, or an FP8 checkpoint's f8_e4m3 (the matmuls
// take it; the absorbed matrices are built from its dequantized values).
Tensor mla_matrix(const WeightStore& store, const std::string& name,
                  std::initializer_list<int64_t> shape) {
  const Tensor t = store.get_matrix(name, shape);
  check(!is_quantized(t.dtype), "tensor '", name, "' has dtype ", dtype_name(t.dtype),
        "; MLA's weights must be f32, f16, bf16 or f8_e4m3");
  return t;
}

MlaWeights bind_mla(const ModelConfig& c, const WeightStore& store, const std::string& prefix) {
  const MlaConfig& m = *c.mla;
  MlaWeights w;
  const int64_t q_rows = c.num_heads * m.qk_head_dim();
  if (m.q_lora_rank > 0) {
    w.q_a_proj = mla_matrix(store, prefix + "q_a_proj.weight", {m.q_lora_rank, c.hidden_size});
    w.q_a_norm = store.get(prefix + "q_a_layernorm.weight", {m.q_lora_rank});
    w.q_b_proj = mla_matrix(store, prefix + "q_b_proj.weight", {q_rows, m.q_lora_rank});
  } else {
    w.q_proj = mla_matrix(store, prefix + "q_proj.weight", {q_rows, c.hidden_size});
  }
  w.kv_a_proj =
      mla_matrix(store, prefix + "kv_a_proj_with_mqa.weight", {m.latent_dim(), c.hidden_size});
  w.kv_a_norm = store.get(prefix + "kv_a_layernorm.weight", {m.kv_lora_rank});
  w.kv_b_proj = mla_matrix(store, prefix + "kv_b_proj.weight",
                           {c.num_heads * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank});
  w.o_proj =
      mla_matrix(store, prefix + "o_proj.weight", {c.hidden_size, c.num_heads * m.v_head_dim});
  return w;
}

AttentionWeights bind_attention(const ModelConfig& c, const WeightStore& store,
                                const std::string& prefix) {
  AttentionWeights a;
  if (c.mla) {
    a.mla = bind_mla(c, store, prefix);
    return a;
  }
  a.q_proj = store.get_matrix(prefix + "q_proj.weight", {c.q_size(), c.hidden_size});
  a.k_proj = store.get_matrix(prefix + "k_proj.weight", {c.kv_size(), c.hidden_size});
  a.v_proj = store.get_matrix(prefix + "v_proj.weight", {c.kv_size(), c.hidden_size});
  a.o_proj = store.get_matrix(prefix + "o_proj.weight", {c.hidden_size, c.q_size()});
  if (c.qkv_bias) {
    a.q_bias = store.get(prefix + "q_proj.bias", {c.q_size()});
    a.k_bias = store.get(prefix + "k_proj.bias", {c.kv_size()});
    a.v_bias = store.get(prefix + "v_proj.bias", {c.kv_size()});
  }
  if (c.o_bias) a.o_bias = store.get(prefix + "o_proj.bias", {c.hidden_size});
  if (c.qk_norm) {
    a.q_norm = store.get(prefix + "q_norm.weight", {c.head_dim});
    a.k_norm = store.get(prefix + "k_norm.weight", {c.head_dim});
  }
  return a;
}

MoeWeights bind_moe(const ModelConfig& c, const WeightStore& store, const std::string& layer) {
  MoeWeights moe;
  const bool mixtral = c.architecture == Architecture::mixtral;
  const std::string prefix = layer + (mixtral ? "block_sparse_moe." : "mlp.");
  moe.router = store.get_matrix(prefix + "gate.weight", {c.num_experts, c.hidden_size});
  if (c.grouped_routing && !c.grouped_routing->softmax)  // V3's noaux_tc; V2 has no bias
    moe.score_correction_bias = store.get(prefix + "gate.e_score_correction_bias", {c.num_experts});
  for (int64_t e = 0; e < c.num_experts; ++e) {
    const std::string expert = prefix + "experts." + std::to_string(e) + ".";
    moe.experts.push_back(
        mixtral ? bind_ffn(store, expert, c.hidden_size, c.moe_intermediate_size, "w1", "w3", "w2")
                : bind_ffn(store, expert, c.hidden_size, c.moe_intermediate_size, "gate_proj",
                           "up_proj", "down_proj"));
  }
  if (c.shared_expert_intermediate_size > 0) {
    moe.has_shared_expert = true;
    // Qwen2-MoE names its one gated expert shared_expert; DeepSeek's
    // n_shared_experts are one ungated MLP of n times the width.
    const std::string shared = c.shared_expert_gated ? "shared_expert." : "shared_experts.";
    moe.shared_expert =
        bind_ffn(store, prefix + shared, c.hidden_size, c.shared_expert_intermediate_size,
                 "gate_proj", "up_proj", "down_proj");
    if (c.shared_expert_gated)
      moe.shared_expert_gate =
          store.get_matrix(prefix + "shared_expert_gate.weight", {1, c.hidden_size});
  }
  return moe;
}

}  // namespace

ModelWeights bind_weights(const ModelConfig& c, const WeightStore& store) {
  ModelWeights w;
  w.embed_tokens = store.get_matrix("model.embed_tokens.weight", {c.vocab_size, c.hidden_size});
  // FP8 checkpoints keep the embedding in bf16 (transformers converts only
  // linear layers); the embedding op has no f8_e4m3 rows.
  check(w.embed_tokens.dtype != DType::f8_e4m3, "tensor 'model.embed_tokens.weight' is f8_e4m3; ",
        "an FP8 checkpoint's embedding must be f32, f16 or bf16");
  w.final_norm = store.get("model.norm.weight", {c.hidden_size});
  // Some tied checkpoints still carry lm_head.weight; tying means the embedding is used.
  w.lm_head = c.tie_word_embeddings
                  ? w.embed_tokens
                  : store.get_matrix("lm_head.weight", {c.vocab_size, c.hidden_size});
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string layer = "model.layers." + std::to_string(i) + ".";
    LayerWeights l;
    l.input_norm = store.get(layer + "input_layernorm.weight", {c.hidden_size});
    l.post_attention_norm = store.get(layer + "post_attention_layernorm.weight", {c.hidden_size});
    l.attention = bind_attention(c, store, layer + "self_attn.");
    l.is_moe = c.is_moe_layer(i);
    if (l.is_moe) {
      l.moe = bind_moe(c, store, layer);
    } else {
      l.mlp = bind_ffn(store, layer + "mlp.", c.hidden_size, c.intermediate_size, "gate_proj",
                       "up_proj", "down_proj");
    }
    w.layers.push_back(std::move(l));
  }
  return w;
}

}  // namespace hive
