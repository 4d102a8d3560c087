#pragma once
// A model's config.json, parsed and validated once. Covers the Llama family
// (Llama, Mistral, Qwen2, Qwen3) and its MoE relatives (Mixtral, Qwen2-MoE,
// Qwen3-MoE); keys follow transformers 4.x and 5.x spellings.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/model/sampling.hpp"

namespace hive {

enum class Architecture { llama, mistral, qwen2, qwen3, mixtral, qwen2_moe, qwen3_moe };

std::string_view architecture_name(Architecture arch);  // the HF class name

struct RopeConfig {
  std::string type = "default";  // default, linear, llama3
  double theta = 10000.0;
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
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
  bool qkv_bias = false;  // bias on q/k/v projections (Qwen2 family)
  bool o_bias = false;    // bias on the output projection (Llama attention_bias)
  bool qk_norm = false;   // RMSNorm on q and k per head (Qwen3 family)

  // Mixture of experts; num_experts == 0 for dense models.
  int64_t num_experts = 0;
  int64_t num_experts_per_token = 0;
  int64_t moe_intermediate_size = 0;
  int64_t shared_expert_intermediate_size = 0;  // 0: none
  bool norm_topk_prob = true;
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers;

  std::vector<int64_t> eos_token_ids;
  int64_t bos_token_id = -1;
  GenerationDefaults generation;  // from generation_config.json

  bool is_moe() const { return num_experts > 0; }
  bool is_moe_layer(int64_t layer) const;
  int64_t q_size() const { return num_heads * head_dim; }
  int64_t kv_size() const { return num_kv_heads * head_dim; }
  // 2 × layers × kv_heads × head_dim × bytes per element.
  int64_t kv_bytes_per_token(int64_t bytes_per_element) const {
    return 2 * num_layers * num_kv_heads * head_dim * bytes_per_element;
  }
};

// Parses and validates; errors name `source` (the file) and the key.
ModelConfig parse_model_config(const nlohmann::json& json, const std::string& source);
// Reads config.json and, when there is one, generation_config.json (more
// end-of-sequence ids, sampling defaults).
ModelConfig load_model_config(const std::filesystem::path& model_dir);
// The sampling defaults of a parsed generation_config.json; errors name
// `source` and the key.
GenerationDefaults parse_generation_defaults(const nlohmann::json& json, const std::string& source);

}  // namespace hive
