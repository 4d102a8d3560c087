#include "runtime/loader/gguf_config.hpp"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "base/error.hpp"
#include "runtime/loader/gguf_metadata.hpp"

namespace hive {

namespace {

using nlohmann::json;

struct GgufArchitecture {
  const char* gguf;
  const char* hf;
  bool moe;
};

constexpr GgufArchitecture kArchitectures[] = {
    {"llama", "LlamaForCausalLM", false},
    {"qwen2", "Qwen2ForCausalLM", false},
    {"qwen3", "Qwen3ForCausalLM", false},
    {"qwen2moe", "Qwen2MoeForCausalLM", true},
    {"qwen3moe", "Qwen3MoeForCausalLM", true},
    // DeepSeek-V2 or V3 by the router's scoring (add_deepseek).
    {"deepseek2", "DeepseekV2ForCausalLM", true},
};

// llama.cpp's expert_gating_func values (llama_expert_gating_func_type).
constexpr int64_t kGatingSoftmax = 1;
constexpr int64_t kGatingSigmoid = 2;

const GgufArchitecture& find_architecture(const GgufFile& file, const std::string& name) {
  for (const GgufArchitecture& a : kArchitectures)
    if (name == a.gguf) return a;
  std::string supported;
  for (const GgufArchitecture& a : kArchitectures)
    supported += str_cat(supported.empty() ? "" : ", ", a.gguf);
  fail(file.path().string(), ": architecture '", name, "' is not supported (supported: ", supported,
       ")");
}

const GgufTensor& required_tensor(const GgufFile& file, const std::string& name) {
  const GgufTensor* tensor = file.find_tensor(name);
  check(tensor != nullptr, file.path().string(), ": missing tensor '", name, "'");
  return *tensor;
}

// Scaling keys as llama.cpp's converter writes them; Llama 3's scaling is a
// tensor (rope_freqs.weight), read by gguf_model_config.
json rope_scaling(const GgufFile& file, const std::string& arch) {
  const std::string prefix = arch + ".rope.scaling.";
  std::string type = gguf_string(file, prefix + "type").value_or("none");
  double factor = gguf_number(file, prefix + "factor").value_or(1.0);
  if (const auto old_linear = gguf_number(file, arch + ".rope.scale_linear")) {
    type = "linear";
    factor = *old_linear;
  }
  if (type == "none") return nullptr;
  check(type == "linear" || type == "yarn", file.path().string(), ": metadata key '", prefix,
        "type' is '", type, "'; supported: none, linear, yarn");
  json scaling = {{"rope_type", type}, {"factor", factor}};
  if (type == "yarn") {
    scaling["original_max_position_embeddings"] =
        gguf_required_integer(file, prefix + "original_context_length");
    scaling["beta_fast"] = gguf_number(file, prefix + "yarn_beta_fast").value_or(32.0);
    scaling["beta_slow"] = gguf_number(file, prefix + "yarn_beta_slow").value_or(1.0);
  }
  return scaling;
}

void add_attention(const GgufFile& file, const std::string& arch, json& j) {
  const auto key = [&](const char* k) { return arch + "." + k; };
  const int64_t heads = gguf_required_integer(file, key("attention.head_count"));
  j["num_attention_heads"] = heads;
  j["num_key_value_heads"] = gguf_integer(file, key("attention.head_count_kv")).value_or(heads);
  // llama.cpp's default head size is embedding / heads, also for Qwen3
  // (whose Hugging Face default is 128): write it out.
  const int64_t hidden = j["hidden_size"].get<int64_t>();
  const int64_t head_dim =
      gguf_integer(file, key("attention.key_length")).value_or(heads > 0 ? hidden / heads : 0);
  j["head_dim"] = head_dim;
  const auto value_length = gguf_integer(file, key("attention.value_length"));
  check(!value_length || *value_length == head_dim, file.path().string(), ": metadata key '",
        key("attention.value_length"), "' is ", value_length.value_or(0),
        ", but Hive needs it equal to the key length ", head_dim);
  const auto rope_dims = gguf_integer(file, key("rope.dimension_count"));
  check(!rope_dims || *rope_dims == head_dim, file.path().string(), ": metadata key '",
        key("rope.dimension_count"), "' is ", rope_dims.value_or(0),
        ", but Hive ropes the whole head (", head_dim, ")");
  const bool bias = file.find_tensor("blk.0.attn_q.bias") != nullptr;
  j[arch == "qwen2" || arch == "qwen2moe" ? "qkv_bias" : "attention_bias"] = bias;
}

void add_experts(const GgufFile& file, const std::string& arch, json& j) {
  const auto key = [&](const char* k) { return arch + "." + k; };
  j["num_experts"] = gguf_required_integer(file, key("expert_count"));
  j["num_experts_per_tok"] = gguf_required_integer(file, key("expert_used_count"));
  // Mixtral (llama with experts) has only feed_forward_length, the experts' width.
  if (arch != "llama")
    j["moe_intermediate_size"] = gguf_required_integer(file, key("expert_feed_forward_length"));
  // llama.cpp renormalises the chosen experts' weights for Qwen3-MoE, not for Qwen2-MoE.
  j["norm_topk_prob"] = gguf_bool(file, key("expert_weights_norm")).value_or(arch == "qwen3moe");
  // A layer without a router is dense (Qwen's mlp_only_layers).
  json dense = json::array();
  for (int64_t layer = 0; layer < j["num_hidden_layers"].get<int64_t>(); ++layer)
    if (!file.find_tensor("blk." + std::to_string(layer) + ".ffn_gate_inp.weight"))
      dense.push_back(layer);
  j["mlp_only_layers"] = dense;
  if (arch == "qwen2moe") {
    const GgufTensor* shared = file.find_tensor("blk.0.ffn_gate_shexp.weight");
    j["shared_expert_intermediate_size"] =
        gguf_integer(file, key("expert_shared_feed_forward_length"))
            .value_or(shared && shared->dims.size() == 2 ? shared->dims[1] : 0);
  }
}

// DeepSeek-V2/V3 (llama.cpp's deepseek2): MLA sizes and DeepSeek's MoE.
// The converter writes MLA as the one-head attention it runs (head_count_kv
// 1, key_length kv_lora_rank + rope, value_length kv_lora_rank) and the
// heads' own sizes as key_length_mla / value_length_mla; older files have
// no _mla keys and the heads' sizes in key_length / value_length.
void add_deepseek(const GgufFile& file, json& j) {
  const std::string path = file.path().string();
  const auto key = [](const char* k) { return std::string("deepseek2.") + k; };
  const int64_t gating = gguf_integer(file, key("expert_gating_func")).value_or(kGatingSoftmax);
  check(gating == kGatingSoftmax || gating == kGatingSigmoid, path, ": metadata key '",
        key("expert_gating_func"), "' is ", gating,
        "; supported: 1 (softmax, DeepSeek-V2), 2 (sigmoid, DeepSeek-V3)");
  const bool v3 = gating == kGatingSigmoid;
  j["architectures"] = {v3 ? "DeepseekV3ForCausalLM" : "DeepseekV2ForCausalLM"};
  j["num_key_value_heads"] = j["num_attention_heads"];
  const int64_t q_lora = gguf_integer(file, key("attention.q_lora_rank")).value_or(0);
  j["q_lora_rank"] = q_lora > 0 ? json(q_lora) : json(nullptr);
  const int64_t kv_lora = gguf_required_integer(file, key("attention.kv_lora_rank"));
  j["kv_lora_rank"] = kv_lora;
  const int64_t rope = gguf_required_integer(file, key("rope.dimension_count"));
  const int64_t key_length = gguf_required_integer(file, key("attention.key_length"));
  const int64_t value_length = gguf_required_integer(file, key("attention.value_length"));
  int64_t qk_head = key_length, v_head = value_length;
  if (gguf_integer(file, key("attention.key_length_mla")) ||
      gguf_integer(file, key("attention.value_length_mla"))) {
    qk_head = gguf_required_integer(file, key("attention.key_length_mla"));
    v_head = gguf_required_integer(file, key("attention.value_length_mla"));
    check(key_length == kv_lora + rope && value_length == kv_lora, path, ": metadata keys '",
          key("attention.key_length"), "' and '", key("attention.value_length"), "' are ",
          key_length, " and ", value_length, "; with _mla keys they must be kv_lora_rank + ",
          "rope.dimension_count = ", kv_lora + rope, " and kv_lora_rank = ", kv_lora);
  }
  check(qk_head > rope, path, ": the key length ", qk_head, " must exceed '",
        key("rope.dimension_count"), "' (", rope, "): the head's un-roped part is the rest");
  j["qk_rope_head_dim"] = rope;
  j["qk_nope_head_dim"] = qk_head - rope;
  j["v_head_dim"] = v_head;
  // llama.cpp ropes adjacent pairs for deepseek2, DeepSeek's own layout.
  j["rope_interleave"] = true;

  j["n_routed_experts"] = gguf_required_integer(file, key("expert_count"));
  j["num_experts_per_tok"] = gguf_required_integer(file, key("expert_used_count"));
  j["moe_intermediate_size"] = gguf_required_integer(file, key("expert_feed_forward_length"));
  j["n_shared_experts"] = gguf_required_integer(file, key("expert_shared_count"));
  j["first_k_dense_replace"] = gguf_integer(file, key("leading_dense_block_count")).value_or(0);
  j["routed_scaling_factor"] = gguf_number(file, key("expert_weights_scale")).value_or(1.0);
  j["norm_topk_prob"] = gguf_bool(file, key("expert_weights_norm")).value_or(false);
  const int64_t groups = gguf_integer(file, key("expert_group_count")).value_or(1);
  j["n_group"] = groups;
  j["topk_group"] = gguf_integer(file, key("expert_group_used_count")).value_or(1);
  j["scoring_func"] = v3 ? "sigmoid" : "softmax";
  // V2 with groups is DeepSeek-V2's group_limited_greedy (a group scored by
  // its best expert, as transformers does; llama.cpp scores every group by
  // its best two).
  j["topk_method"] = v3 ? "noaux_tc" : groups > 1 ? "group_limited_greedy" : "greedy";
  j["moe_layer_freq"] = 1;
  check(j.contains("intermediate_size"), path, ": metadata key '", key("feed_forward_length"),
        "' is missing");
  // llama.cpp reads YaRN's mscale_all_dim as yarn_log_multiplier / 0.1 and
  // takes mscale equal to it (the converter writes no mscale).
  if (j.contains("rope_scaling") && j["rope_scaling"]["rope_type"] == "yarn")
    if (const auto log_mul = gguf_number(file, key("rope.scaling.yarn_log_multiplier"))) {
      const double mscale = static_cast<float>(*log_mul) / 0.1f;  // as llama.cpp divides
      j["rope_scaling"]["mscale_all_dim"] = mscale;
      j["rope_scaling"]["mscale"] = mscale;
    }
}

json eos_token_ids(const GgufFile& file) {
  json ids = json::array();
  for (const char* k : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                        "tokenizer.ggml.eom_token_id"})
    if (const auto id = gguf_integer(file, k))
      if (std::find(ids.begin(), ids.end(), json(*id)) == ids.end()) ids.push_back(*id);
  return ids;
}

}  // namespace

bool is_gguf_model(const std::filesystem::path& path) {
  return path.extension() == ".gguf" && std::filesystem::is_regular_file(path);
}

json gguf_config_json(const GgufFile& file) {
  const std::string arch = file.get<std::string>("general.architecture");
  const GgufArchitecture& entry = find_architecture(file, arch);
  const auto key = [&](const char* k) { return arch + "." + k; };
  const bool experts = gguf_integer(file, key("expert_count")).value_or(0) > 0;
  check(!entry.moe || experts, file.path().string(), ": metadata key '", key("expert_count"),
        "' is missing or 0; ", arch, " needs experts");
  json j;
  j["architectures"] = {arch == "llama" && experts ? "MixtralForCausalLM" : entry.hf};
  const GgufTensor& embedding = required_tensor(file, "token_embd.weight");
  check(embedding.dims.size() == 2, file.path().string(),
        ": tensor 'token_embd.weight' must have 2 dimensions (got ", embedding.dims.size(), ")");
  j["vocab_size"] = embedding.dims[1];
  j["hidden_size"] = gguf_required_integer(file, key("embedding_length"));
  j["num_hidden_layers"] = gguf_required_integer(file, key("block_count"));
  if (const auto ffn = gguf_integer(file, key("feed_forward_length")))
    j["intermediate_size"] = *ffn;
  if (arch == "deepseek2")
    j["num_attention_heads"] = gguf_required_integer(file, key("attention.head_count"));
  else
    add_attention(file, arch, j);
  j["rms_norm_eps"] = gguf_required_number(file, key("attention.layer_norm_rms_epsilon"));
  j["rope_theta"] = gguf_number(file, key("rope.freq_base")).value_or(10000.0);
  if (json scaling = rope_scaling(file, arch); !scaling.is_null()) j["rope_scaling"] = scaling;
  j["max_position_embeddings"] = gguf_required_integer(file, key("context_length"));
  j["tie_word_embeddings"] = file.find_tensor("output.weight") == nullptr;
  // llama.cpp applies no sliding window to these architectures.
  j["sliding_window"] = nullptr;
  if (arch == "deepseek2")
    add_deepseek(file, j);
  else if (experts)
    add_experts(file, arch, j);
  j["eos_token_id"] = eos_token_ids(file);
  if (const auto bos = gguf_integer(file, "tokenizer.ggml.bos_token_id")) j["bos_token_id"] = *bos;
  return j;
}

ModelConfig gguf_model_config(const GgufFile& file) {
  ModelConfig c = parse_model_config(gguf_config_json(file), file.path().string());
  if (const GgufTensor* factors = file.find_tensor("rope_freqs.weight")) {
    check(factors->type == GgmlType::f32 && factors->numel == c.head_dim / 2, file.path().string(),
          ": tensor 'rope_freqs.weight' must be ", c.head_dim / 2, " f32 values (got ",
          factors->numel, " of type ", ggml_type_info(factors->type).name, ")");
    c.rope.freq_factors.resize(static_cast<size_t>(factors->numel));
    std::memcpy(c.rope.freq_factors.data(), factors->data, factors->nbytes);  // any alignment
  }
  return c;
}

}  // namespace hive
