#include "runtime/loader/gguf_tensor_names.hpp"

#include <string_view>

namespace hive {

namespace {

struct NamePair {
  std::string_view gguf;
  std::string_view hf;
};

constexpr NamePair kGlobalNames[] = {
    {"token_embd.weight", "model.embed_tokens.weight"},
    {"output_norm.weight", "model.norm.weight"},
    {"output.weight", "lm_head.weight"},
};

// Per layer, without the ".weight" / ".bias" suffix. "mlp." becomes
// "block_sparse_moe." for Mixtral's router.
constexpr NamePair kLayerNames[] = {
    {"attn_norm", "input_layernorm"},
    {"ffn_norm", "post_attention_layernorm"},
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"},
    {"ffn_gate", "mlp.gate_proj"},
    {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
    {"ffn_gate_inp", "mlp.gate"},
    {"ffn_gate_shexp", "mlp.shared_expert.gate_proj"},
    {"ffn_up_shexp", "mlp.shared_expert.up_proj"},
    {"ffn_down_shexp", "mlp.shared_expert.down_proj"},
    {"ffn_gate_inp_shexp", "mlp.shared_expert_gate"},
    // DeepSeek's latent attention (MLA); its kv_b_proj is the joined
    // attn_k_b / attn_v_b (gguf_weights.cpp) or, in older files, attn_kv_b.
    {"attn_q_a", "self_attn.q_a_proj"},
    {"attn_q_a_norm", "self_attn.q_a_layernorm"},
    {"attn_q_b", "self_attn.q_b_proj"},
    {"attn_kv_a_mqa", "self_attn.kv_a_proj_with_mqa"},
    {"attn_kv_a_norm", "self_attn.kv_a_layernorm"},
    {"attn_kv_b", "self_attn.kv_b_proj"},
};

// DeepSeek's n_shared_experts are one MLP named shared_experts, not
// Qwen2-MoE's shared_expert; its router's bias has no ".bias" suffix.
constexpr std::string_view kQwenShared = "mlp.shared_expert.";
constexpr std::string_view kDeepseekShared = "mlp.shared_experts.";
constexpr std::string_view kScoreBias = "exp_probs_b";
constexpr std::string_view kHfScoreBias = "mlp.gate.e_score_correction_bias";

struct ExpertNames {
  std::string_view gguf;
  std::string_view hf;
  std::string_view mixtral;
};

constexpr ExpertNames kExpertNames[] = {
    {"ffn_gate_exps", "gate_proj", "w1"},
    {"ffn_up_exps", "up_proj", "w3"},
    {"ffn_down_exps", "down_proj", "w2"},
};

constexpr std::string_view kBlock = "blk.";
constexpr std::string_view kLayer = "model.layers.";

// "<prefix>N.<rest>" -> N and rest.
bool split_layer(std::string_view name, std::string_view prefix, std::string_view& layer,
                 std::string_view& rest) {
  if (!name.starts_with(prefix)) return false;
  name.remove_prefix(prefix.size());
  const size_t dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos) return false;
  for (const char c : name.substr(0, dot))
    if (c < '0' || c > '9') return false;
  layer = name.substr(0, dot);
  rest = name.substr(dot + 1);
  return true;
}

// "base.weight" -> base and ".weight".
bool split_suffix(std::string_view rest, std::string_view& base, std::string_view& suffix) {
  for (const std::string_view s : {std::string_view(".weight"), std::string_view(".bias")})
    if (rest.ends_with(s)) {
      base = rest.substr(0, rest.size() - s.size());
      suffix = s;
      return true;
    }
  return false;
}

std::string cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (const std::string_view p : parts) out += p;
  return out;
}

}  // namespace

std::optional<HfTensorName> hf_tensor_name(const std::string& gguf_name, Architecture arch) {
  const bool mixtral = arch == Architecture::mixtral;
  const bool deepseek = arch == Architecture::deepseek_v2 || arch == Architecture::deepseek_v3;
  for (const NamePair& pair : kGlobalNames)
    if (gguf_name == pair.gguf) return HfTensorName{std::string(pair.hf)};
  std::string_view layer, rest, base, suffix;
  if (!split_layer(gguf_name, kBlock, layer, rest) || !split_suffix(rest, base, suffix))
    return std::nullopt;
  const std::string prefix = cat({kLayer, layer, "."});
  const std::string_view moe = mixtral ? "block_sparse_moe." : "mlp.";
  for (const ExpertNames& e : kExpertNames)
    if (base == e.gguf)
      return HfTensorName{cat({prefix, moe, "experts.{}.", mixtral ? e.mixtral : e.hf, suffix}),
                          true};
  if (deepseek && base == kScoreBias && suffix == ".bias")
    return HfTensorName{cat({prefix, kHfScoreBias})};
  for (const NamePair& pair : kLayerNames) {
    if (base != pair.gguf) continue;
    std::string hf = cat({prefix, pair.hf, suffix});
    if (mixtral && base == "ffn_gate_inp") hf = cat({prefix, moe, "gate", suffix});
    if (deepseek && pair.hf.starts_with(kQwenShared))
      hf = cat({prefix, kDeepseekShared, pair.hf.substr(kQwenShared.size()), suffix});
    return HfTensorName{hf, false, base == "attn_q" || base == "attn_k"};
  }
  return std::nullopt;
}

std::optional<GgufTensorSlot> gguf_tensor_slot(const std::string& hf_name) {
  for (const NamePair& pair : kGlobalNames)
    if (hf_name == pair.hf) return GgufTensorSlot{std::string(pair.gguf), std::nullopt};
  std::string_view layer, rest, base, suffix;
  if (!split_layer(hf_name, kLayer, layer, rest)) return std::nullopt;
  const std::string block = cat({kBlock, layer, "."});
  if (rest == kHfScoreBias) return GgufTensorSlot{cat({block, kScoreBias, ".bias"}), std::nullopt};
  if (!split_suffix(rest, base, suffix)) return std::nullopt;
  if (base.starts_with("block_sparse_moe."))
    base = base.substr(17);  // Mixtral, as mlp.
  else if (base.starts_with("mlp."))
    base = base.substr(4);
  std::string qwen_shared;  // DeepSeek's shared_experts.X is where Qwen's shared_expert.X goes
  if (base.starts_with("shared_experts."))
    base = qwen_shared = cat({"shared_expert.", base.substr(15)});
  std::string_view expert, projection;
  if (split_layer(base, "experts.", expert, projection))
    for (const ExpertNames& e : kExpertNames)
      if (projection == e.hf || projection == e.mixtral)
        return GgufTensorSlot{cat({block, e.gguf, suffix}), std::stoll(std::string(expert))};
  for (const NamePair& pair : kLayerNames) {
    std::string_view hf = pair.hf;
    if (hf.starts_with("mlp.")) hf = hf.substr(4);
    if (base == hf) return GgufTensorSlot{cat({block, pair.gguf, suffix}), std::nullopt};
  }
  return std::nullopt;
}

std::string gguf_tensor_name(const std::string& hf_name) {
  const std::optional<GgufTensorSlot> slot = gguf_tensor_slot(hf_name);
  if (!slot) return hf_name;
  if (!slot->expert) return slot->name;
  return slot->name + " (expert " + std::to_string(*slot->expert) + ")";
}

}  // namespace hive
