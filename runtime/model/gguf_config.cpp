#include "runtime/model/gguf_config.hpp"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "kernels/error.hpp"
#include "runtime/model/gguf_metadata.hpp"

namespace hive {

namespace {

using nlohmann::json;

struct GgufArchitecture {
  const char* gguf;
  const char* hf;
  bool moe;
};

constexpr GgufArchitecture kArchitectures[] = {
    {"llama", "LlamaForCausalLM", false},      {"qwen2", "Qwen2ForCausalLM", false},
    {"qwen3", "Qwen3ForCausalLM", false},      {"qwen2moe", "Qwen2MoeForCausalLM", true},
    {"qwen3moe", "Qwen3MoeForCausalLM", true},
};

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
  add_attention(file, arch, j);
  j["rms_norm_eps"] = gguf_required_number(file, key("attention.layer_norm_rms_epsilon"));
  j["rope_theta"] = gguf_number(file, key("rope.freq_base")).value_or(10000.0);
  if (json scaling = rope_scaling(file, arch); !scaling.is_null()) j["rope_scaling"] = scaling;
  j["max_position_embeddings"] = gguf_required_integer(file, key("context_length"));
  j["tie_word_embeddings"] = file.find_tensor("output.weight") == nullptr;
  // llama.cpp applies no sliding window to these architectures.
  j["sliding_window"] = nullptr;
  if (experts) add_experts(file, arch, j);
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
