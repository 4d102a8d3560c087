#include "runtime/loader/gguf_model_metadata.hpp"

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/json_reader.hpp"

namespace hive {

namespace {

using nlohmann::json;

// llama.cpp's token types (llama_token_type).
constexpr int32_t kNormal = 1;
constexpr int32_t kControl = 3;
constexpr int32_t kUserDefined = 4;
constexpr int32_t kUnused = 5;

void add_rope(GgufWriter& w, const std::string& arch, const RopeConfig& rope) {
  w.add(arch + ".rope.freq_base", static_cast<float>(rope.theta));
  if (rope.type == "default" || rope.type == "llama3") return;  // llama3: rope_freqs.weight
  const std::string prefix = arch + ".rope.scaling.";
  w.add(prefix + "type", rope.type);
  w.add(prefix + "factor", static_cast<float>(rope.factor));
  if (rope.type == "yarn") {
    w.add(prefix + "original_context_length",
          static_cast<uint32_t>(rope.original_max_position_embeddings));
    w.add(prefix + "yarn_beta_fast", static_cast<float>(rope.beta_fast));
    w.add(prefix + "yarn_beta_slow", static_cast<float>(rope.beta_slow));
  }
}

void add_experts(GgufWriter& w, const std::string& arch, const ModelConfig& c) {
  w.add(arch + ".expert_count", static_cast<uint32_t>(c.num_experts));
  w.add(arch + ".expert_used_count", static_cast<uint32_t>(c.num_experts_per_token));
  // Mixtral's experts are feed_forward_length wide; it has no such key.
  if (c.architecture != Architecture::mixtral)
    w.add(arch + ".expert_feed_forward_length", static_cast<uint32_t>(c.moe_intermediate_size));
  if (c.shared_expert_intermediate_size > 0)
    w.add(arch + ".expert_shared_feed_forward_length",
          static_cast<uint32_t>(c.shared_expert_intermediate_size));
  // The readers' default: renormalised for qwen3moe only. Written when the
  // checkpoint says otherwise.
  if (arch != "llama" && c.norm_topk_prob != (arch == "qwen3moe"))
    w.add(arch + ".expert_weights_norm", c.norm_topk_prob);
}

// deepseek2's keys, as llama.cpp's converter writes them (gguf_config.cpp
// reads them back): MLA as the one-head attention llama.cpp runs, the
// heads' sizes as the _mla keys, DeepSeek's routing.
void add_deepseek(GgufWriter& w, const ModelConfig& c) {
  const MlaConfig& m = *c.mla;
  const GroupedRouting& g = *c.grouped_routing;
  check(m.rope_interleave, "rope_interleave false cannot be written as GGUF (llama.cpp ropes ",
        "deepseek2 in adjacent pairs)");
  // deepseek2 holds one YaRN mscale (yarn_log_multiplier); llama.cpp takes
  // mscale equal to mscale_all_dim.
  check(c.rope.type != "yarn" || c.rope.mscale == c.rope.mscale_all_dim, "rope scaling yarn with ",
        "mscale ", c.rope.mscale, " and mscale_all_dim ", c.rope.mscale_all_dim,
        " cannot be written as GGUF (deepseek2 holds one, llama.cpp takes mscale equal to "
        "mscale_all_dim)");
  const auto key = [](const char* k) { return std::string("deepseek2.") + k; };
  const auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  w.add(key("attention.head_count_kv"), uint32_t{1});
  w.add(key("leading_dense_block_count"), u32(c.first_k_dense_replace));
  if (m.q_lora_rank > 0) w.add(key("attention.q_lora_rank"), u32(m.q_lora_rank));
  w.add(key("attention.kv_lora_rank"), u32(m.kv_lora_rank));
  w.add(key("attention.key_length"), u32(m.kv_lora_rank + m.qk_rope_head_dim));
  w.add(key("attention.value_length"), u32(m.kv_lora_rank));
  w.add(key("attention.key_length_mla"), u32(m.qk_head_dim()));
  w.add(key("attention.value_length_mla"), u32(m.v_head_dim));
  w.add(key("rope.dimension_count"), u32(m.qk_rope_head_dim));
  w.add(key("expert_feed_forward_length"), u32(c.moe_intermediate_size));
  w.add(key("expert_count"), u32(c.num_experts));
  w.add(key("expert_used_count"), u32(c.num_experts_per_token));
  w.add(key("expert_shared_count"),
        u32(c.shared_expert_intermediate_size / c.moe_intermediate_size));
  w.add(key("expert_weights_scale"), static_cast<float>(g.routed_scaling_factor));
  if (c.norm_topk_prob) w.add(key("expert_weights_norm"), true);
  w.add(key("expert_group_count"), u32(g.n_group));
  w.add(key("expert_group_used_count"), u32(g.topk_group));
  w.add(key("expert_gating_func"), uint32_t{g.softmax ? 1u : 2u});  // softmax, sigmoid
  if (c.rope.type == "yarn" && c.rope.mscale_all_dim != 0)
    w.add(key("rope.scaling.yarn_log_multiplier"), static_cast<float>(0.1 * c.rope.mscale_all_dim));
}

// The token named in tokenizer_config.json (a string or {"content": ...}).
std::optional<std::string> config_token(const json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content")) return it->at("content").get<std::string>();
  return std::nullopt;
}

// GGUF's gpt2 model holds only a byte-level BPE split by GPT-2's regex.
void check_byte_level_bpe(const json& tokenizer, const std::filesystem::path& path) {
  const json& model = tokenizer.at("model");
  const std::string type = model.value("type", "");
  check(type == "BPE", path.string(), ": tokenizer model '", type,
        "' cannot be written (hive quantize writes byte-level BPE, GGUF's \"gpt2\")");
  const json& pre = tokenizer.value("pre_tokenizer", json());
  const bool gpt2 =
      pre.is_object() && pre.value("type", "") == "ByteLevel" && pre.value("use_regex", true);
  check(gpt2, path.string(), ": pre-tokenizer ", pre.dump(),
        " cannot be written: Hive reads only GPT-2's (ByteLevel with its regex, GGUF's "
        "tokenizer.ggml.pre \"gpt-2\")");
}

}  // namespace

std::string gguf_architecture(const ModelConfig& config) {
  switch (config.architecture) {
    case Architecture::llama:
    case Architecture::mistral:
    case Architecture::mixtral:
      return "llama";
    case Architecture::qwen2:
      return "qwen2";
    case Architecture::qwen3:
      return "qwen3";
    case Architecture::qwen2_moe:
      return "qwen2moe";
    case Architecture::qwen3_moe:
      return "qwen3moe";
    case Architecture::deepseek_v2:
    case Architecture::deepseek_v3:
      return "deepseek2";
    default:
      fail("architecture ", architecture_name(config.architecture),
           " cannot be written as GGUF (supported: Llama, Mistral, Mixtral, Qwen2, Qwen3, "
           "Qwen2-MoE, Qwen3-MoE, DeepSeek-V2, DeepSeek-V3)");
  }
}

void add_model_metadata(GgufWriter& w, const ModelConfig& c, const std::string& name) {
  const std::string arch = gguf_architecture(c);
  check(c.rope.type == "default" || c.rope.type == "linear" || c.rope.type == "llama3" ||
            c.rope.type == "yarn",
        "rope scaling '", c.rope.type, "' cannot be written as GGUF");
  w.add("general.architecture", arch);
  w.add("general.name", name);
  const auto key = [&](const char* k) { return arch + "." + k; };
  w.add(key("context_length"), static_cast<uint32_t>(c.max_position_embeddings));
  w.add(key("embedding_length"), static_cast<uint32_t>(c.hidden_size));
  w.add(key("block_count"), static_cast<uint32_t>(c.num_layers));
  w.add(key("feed_forward_length"), static_cast<uint32_t>(c.intermediate_size));
  w.add(key("attention.head_count"), static_cast<uint32_t>(c.num_heads));
  if (c.mla) {
    add_deepseek(w, c);
  } else {
    w.add(key("attention.head_count_kv"), static_cast<uint32_t>(c.num_kv_heads));
    w.add(key("attention.key_length"), static_cast<uint32_t>(c.head_dim));
    w.add(key("attention.value_length"), static_cast<uint32_t>(c.head_dim));
    w.add(key("rope.dimension_count"), static_cast<uint32_t>(c.head_dim));
  }
  w.add(key("attention.layer_norm_rms_epsilon"), static_cast<float>(c.rms_norm_eps));
  w.add(key("vocab_size"), static_cast<uint32_t>(c.vocab_size));
  add_rope(w, arch, c.rope);
  if (c.is_moe() && !c.mla) add_experts(w, arch, c);
  // llama.cpp's end-of-turn id: a second end id (the chat's <|im_end|>).
  if (!c.eos_token_ids.empty())
    w.add("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(c.eos_token_ids[0]));
  if (c.eos_token_ids.size() > 1)
    w.add("tokenizer.ggml.eot_token_id", static_cast<uint32_t>(c.eos_token_ids[1]));
  if (c.bos_token_id >= 0)
    w.add("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(c.bos_token_id));
}

std::vector<float> llama3_rope_factors(const RopeConfig& rope, int64_t head_dim) {
  const double old_len = static_cast<double>(rope.original_max_position_embeddings);
  const double low = rope.low_freq_factor, high = rope.high_freq_factor;
  std::vector<float> factors;
  for (int64_t i = 0; i < head_dim; i += 2) {
    // As the converter computes it: the frequency in f32, the rest in double.
    const float exponent = static_cast<float>(i) / static_cast<float>(head_dim);
    const float freq = 1.0f / std::pow(static_cast<float>(rope.theta), exponent);
    const double wavelen = 2 * M_PI / static_cast<double>(freq);
    double factor = 1.0;
    if (wavelen > old_len / low) {
      factor = rope.factor;
    } else if (wavelen >= old_len / high) {
      const double smooth = (old_len / wavelen - low) / (high - low);
      factor = 1 / ((1 - smooth) / rope.factor + smooth);
    }
    factors.push_back(static_cast<float>(factor));
  }
  return factors;
}

bool add_tokenizer_metadata(GgufWriter& w, const std::filesystem::path& dir, const ModelConfig& c) {
  const std::filesystem::path tokenizer_path = dir / "tokenizer.json";
  if (!std::filesystem::exists(tokenizer_path)) return false;
  const json tokenizer = read_json_file(tokenizer_path);
  check_byte_level_bpe(tokenizer, tokenizer_path);
  const std::filesystem::path config_path = dir / "tokenizer_config.json";
  const json config =
      std::filesystem::exists(config_path) ? read_json_file(config_path) : json::object();
  // Ids the tokenizer leaves free up to the embedding's size get llama.cpp's
  // [PAD<id>] names, unused.
  std::vector<std::string> tokens(static_cast<size_t>(c.vocab_size));
  std::vector<int32_t> types(tokens.size(), kUnused);
  const auto place = [&](const std::string& text, int64_t id, int32_t type) {
    check(id >= 0 && id < c.vocab_size, tokenizer_path.string(), ": token '", text, "' has id ", id,
          ", outside the model's vocabulary of ", c.vocab_size);
    tokens[static_cast<size_t>(id)] = text;
    types[static_cast<size_t>(id)] = type;
  };
  for (const auto& [text, id] : tokenizer.at("model").at("vocab").items())
    place(text, id.get<int64_t>(), kNormal);
  for (const json& added : tokenizer.value("added_tokens", json::array()))
    place(added.at("content").get<std::string>(), added.at("id").get<int64_t>(),
          added.value("special", false) ? kControl : kUserDefined);
  std::map<std::string, int64_t> ids;
  for (size_t id = 0; id < tokens.size(); ++id) {
    if (types[id] == kUnused) tokens[id] = "[PAD" + std::to_string(id) + "]";
    ids.emplace(tokens[id], static_cast<int64_t>(id));
  }
  std::vector<std::string> merges;
  for (const json& merge : tokenizer.at("model").value("merges", json::array()))
    merges.push_back(merge.is_string()
                         ? merge.get<std::string>()
                         : merge.at(0).get<std::string>() + " " + merge.at(1).get<std::string>());
  w.add("tokenizer.ggml.model", "gpt2");
  w.add("tokenizer.ggml.pre", "gpt-2");
  w.add_array("tokenizer.ggml.tokens", tokens);
  w.add_array("tokenizer.ggml.token_type", types);
  w.add_array("tokenizer.ggml.merges", merges);
  if (const auto pad = config_token(config, "pad_token"); pad && ids.count(*pad))
    w.add("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(ids[*pad]));
  w.add("tokenizer.ggml.add_bos_token", config.value("add_bos_token", false));
  if (config.value("add_eos_token", false)) w.add("tokenizer.ggml.add_eos_token", true);
  if (config.contains("chat_template") && config["chat_template"].is_string())
    w.add("tokenizer.chat_template", config["chat_template"].get<std::string>());
  else if (std::filesystem::exists(dir / "chat_template.jinja")) {
    std::ifstream in(dir / "chat_template.jinja");
    w.add("tokenizer.chat_template", std::string(std::istreambuf_iterator<char>(in), {}));
  }
  return true;
}

}  // namespace hive
