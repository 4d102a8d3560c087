#pragma once
// A model's config.json, parsed and validated once. Covers the Llama family
// (Llama, Mistral, Qwen2, Qwen3) and its MoE relatives (Mixtral, Qwen2-MoE,
// Qwen3-MoE) and DeepSeek-V2/V3 (MLA, grouped routing); keys follow
// transformers 4.x and 5.x spellings.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/core/sampling_params.hpp"

namespace hive {

enum class Architecture {
  llama,
  mistral,
  qwen2,
  qwen3,
  mixtral,
  qwen2_moe,
  qwen3_moe,
  deepseek_v2,
  deepseek_v3
};

std::string_view architecture_name(Architecture arch);  // the HF class name

struct RopeConfig {
  std::string type = "default";  // default, linear, llama3, yarn
  double theta = 10000.0;
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
  // YaRN (DeepSeek-V3): the ramp between beta_fast and beta_slow rotations,
  // and the mscale factors of the cos/sin and of the softmax scale.
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  double mscale = 0.0;          // 0: absent
  double mscale_all_dim = 0.0;  // 0: absent
  // llama.cpp's per-frequency divisors (a GGUF's rope_freqs.weight, which
  // its converter writes for Llama 3 scaling instead of the parameters):
  // inv_freq[i] is divided by freq_factors[i]. Empty: none.
  std::vector<float> freq_factors;
};

// Multi-head latent attention (DeepSeek-V2/V3). Per token and layer the
// cache holds one latent of kv_lora_rank (after its RMSNorm) plus the roped
// key part of qk_rope_head_dim, shared by every head.
struct MlaConfig {
  int64_t q_lora_rank = 0;  // 0: q_proj straight from the hidden state
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
  bool rope_interleave = true;  // rope pairs (x0, x1), (x2, x3), ... as DeepSeek lays them out

  int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
  int64_t latent_dim() const { return kv_lora_rank + qk_rope_head_dim; }  // one cache row
};

// DeepSeek's grouped routers: the experts of the topk_group best of n_group
// groups, weights times routed_scaling_factor. V3 (noaux_tc): sigmoid
// scores, a bias added for choosing only, a group scored by its two best.
// V2 (group_limited_greedy; greedy is one group): softmax probabilities, no
// bias, a group scored by its best.
struct GroupedRouting {
  bool softmax = false;  // V2's rule
  int64_t n_group = 1;
  int64_t topk_group = 1;
  double routed_scaling_factor = 1.0;
};

// The sampling defaults a checkpoint's generation_config.json writes, for
// requests that leave a field unset (as vLLM's `--generation-config auto`
// takes them): only keys the file has count. "do_sample": false, written,
// means greedy whatever the temperature, as in Hugging Face's generate()
// (vLLM ignores do_sample).
struct GenerationDefaults {
  std::optional<float> temperature;
  std::optional<int> top_k;
  std::optional<float> top_p;
  std::optional<int64_t> max_new_tokens;
  std::optional<float> min_p;
  std::optional<float> repetition_penalty;  // applied under do_sample false too, as in HF
  // Sampling keys the file sets to a value that would change the output
  // but Hive does not apply (typical_p, num_beams, ...), for a note.
  std::vector<std::string> ignored;

  // Hive's defaults (greedy, no top-k, top-p, min-p limit, no penalty) with
  // these applied.
  SamplingParams sampling() const;
  // max_new_tokens when the file gives it, else `fallback`.
  int64_t max_tokens_or(int64_t fallback) const { return max_new_tokens.value_or(fallback); }
};

struct ModelConfig {
  Architecture architecture = Architecture::llama;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;  // dense MLP layers
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  double rms_norm_eps = 1e-6;
  RopeConfig rope;
  int64_t max_position_embeddings = 0;
  int64_t sliding_window = 0;  // 0: full attention
  bool tie_word_embeddings = false;
  bool qkv_bias = false;         // bias on q/k/v projections (Qwen2 family)
  bool o_bias = false;           // bias on the output projection (Llama attention_bias)
  bool qk_norm = false;          // RMSNorm on q and k per head (Qwen3 family)
  std::optional<MlaConfig> mla;  // DeepSeek: latent attention instead of q/k/v

  // Mixture of experts; num_experts == 0 for dense models.
  int64_t num_experts = 0;
  int64_t num_experts_per_token = 0;
  int64_t moe_intermediate_size = 0;
  int64_t shared_expert_intermediate_size = 0;  // 0: none
  bool shared_expert_gated = true;  // Qwen2-MoE's sigmoid gate; DeepSeek's shared experts have none
  std::optional<GroupedRouting> grouped_routing;  // DeepSeek-V2/V3
  int64_t first_k_dense_replace = 0;              // DeepSeek: the first layers are dense
  bool norm_topk_prob = true;
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers;

  // quantization_config {quant_method: "fp8", fmt: "e4m3", activation_scheme:
  // "dynamic", weight_block_size: [128, 128]}, DeepSeek-V3's: the linear
  // layers' weights are f8_e4m3 with a weight_scale_inv per 128 x 128 block.
  bool fp8_block_weights = false;

  std::vector<int64_t> eos_token_ids;
  int64_t bos_token_id = -1;
  GenerationDefaults generation;  // from generation_config.json

  bool is_moe() const { return num_experts > 0; }
  bool is_moe_layer(int64_t layer) const;
  int64_t q_size() const { return num_heads * head_dim; }
  int64_t kv_size() const { return num_kv_heads * head_dim; }
  // The paged cache's row per token and layer: num_kv_heads × head_dim for
  // K and again for V; for MLA one latent row (no separate V).
  int64_t cache_heads() const { return mla ? 1 : num_kv_heads; }
  int64_t cache_head_dim() const { return mla ? mla->latent_dim() : head_dim; }
  bool cache_has_values() const { return !mla; }
  // 2 × layers × kv_heads × head_dim × bytes per element; for MLA
  // layers × (kv_lora_rank + qk_rope_head_dim) × bytes per element.
  int64_t kv_bytes_per_token(int64_t bytes_per_element) const {
    return (cache_has_values() ? 2 : 1) * num_layers * cache_heads() * cache_head_dim() *
           bytes_per_element;
  }
  // What plain multi-head attention with this model's heads would cache:
  // K of qk_head_dim and V of v_head_dim per head (for comparing with MLA).
  int64_t mha_kv_bytes_per_token(int64_t bytes_per_element) const {
    if (!mla) return kv_bytes_per_token(bytes_per_element);
    return num_layers * num_heads * (mla->qk_head_dim() + mla->v_head_dim) * bytes_per_element;
  }
};

// Parses and validates; errors name `source` (the file) and the key.
ModelConfig parse_model_config(const nlohmann::json& json, const std::string& source);
// Reads config.json and, when there is one, generation_config.json (more
// end-of-sequence ids, sampling defaults); for a GGUF file (is_gguf_model),
// its metadata (gguf_config.hpp).
ModelConfig load_model_config(const std::filesystem::path& model_dir);
// The sampling defaults of a parsed generation_config.json; errors name
// `source` and the key.
GenerationDefaults parse_generation_defaults(const nlohmann::json& json, const std::string& source);

}  // namespace hive
