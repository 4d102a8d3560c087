#include "runtime/loader/model_config.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/json_reader.hpp"
#include "runtime/loader/config_reader.hpp"
#include "runtime/loader/deepseek_config.hpp"
#include "runtime/loader/gguf_config.hpp"

namespace hive {

namespace {

using config_reader::expect_positive;
using config_reader::kMaxDimension;
using config_reader::kMaxTokenIndex;
using config_reader::Reader;
using nlohmann::json;

struct ArchitectureName {
  const char* name;
  Architecture arch;
};

constexpr ArchitectureName kArchitectures[] = {
    {"LlamaForCausalLM", Architecture::llama},
    {"MistralForCausalLM", Architecture::mistral},
    {"Qwen2ForCausalLM", Architecture::qwen2},
    {"Qwen3ForCausalLM", Architecture::qwen3},
    {"MixtralForCausalLM", Architecture::mixtral},
    {"Qwen2MoeForCausalLM", Architecture::qwen2_moe},
    {"Qwen3MoeForCausalLM", Architecture::qwen3_moe},
    {"DeepseekV2ForCausalLM", Architecture::deepseek_v2},
    {"DeepseekV3ForCausalLM", Architecture::deepseek_v3},
};

RopeConfig parse_rope(const Reader& config, const std::string& source) {
  RopeConfig rope;
  rope.theta = config.number_or("rope_theta", rope.theta);
  // transformers 5 keeps everything under rope_parameters; 4.x uses
  // rope_theta plus an optional rope_scaling object, which transformers 5
  // still takes first when it is given and not empty
  // (`rope_scaling or rope_parameters`).
  const auto given = [&](const char* k) { return config.has(k) && !config.object(k).empty(); };
  const char* key = given("rope_scaling")           ? "rope_scaling"
                    : config.has("rope_parameters") ? "rope_parameters"
                                                    : nullptr;
  if (key) {
    const json& object = config.object(key);
    check(object.is_object(), source, ": '", key, "' must be an object");
    const Reader scaling(object, source);
    rope.theta = scaling.number_or("rope_theta", rope.theta);
    rope.type = scaling.string_or("rope_type", scaling.string_or("type", "default"));
    rope.factor = scaling.number_or("factor", rope.factor);
    rope.low_freq_factor = scaling.number_or("low_freq_factor", rope.low_freq_factor);
    rope.high_freq_factor = scaling.number_or("high_freq_factor", rope.high_freq_factor);
    rope.original_max_position_embeddings = scaling.integer_or(
        "original_max_position_embeddings", rope.original_max_position_embeddings);
    rope.beta_fast = scaling.number_or("beta_fast", rope.beta_fast);
    rope.beta_slow = scaling.number_or("beta_slow", rope.beta_slow);
    rope.mscale = scaling.number_or("mscale", rope.mscale);
    rope.mscale_all_dim = scaling.number_or("mscale_all_dim", rope.mscale_all_dim);
    check(!scaling.has("attention_factor"), source,
          ": rope attention_factor is not supported (mscale and mscale_all_dim are)");
  }
  check(rope.type == "default" || rope.type == "linear" || rope.type == "llama3" ||
            rope.type == "yarn",
        source, ": rope type '", rope.type,
        "' is not supported (supported: default, linear, llama3, yarn)");
  if (rope.type == "yarn")
    check(rope.original_max_position_embeddings >= 1 && rope.beta_fast > 0 && rope.beta_slow > 0,
          source,
          ": yarn rope needs original_max_position_embeddings, beta_fast and beta_slow > 0");
  check(rope.theta > 0, source, ": rope_theta must be > 0 (got ", rope.theta, ")");
  check(rope.factor > 0, source, ": rope factor must be > 0 (got ", rope.factor, ")");
  if (rope.type == "llama3")
    check(rope.high_freq_factor > rope.low_freq_factor, source,
          ": llama3 rope needs high_freq_factor > low_freq_factor (got ", rope.high_freq_factor,
          " and ", rope.low_freq_factor, ")");
  return rope;
}

// quantization_config: only DeepSeek-V3's FP8 format (transformers'
// FineGrainedFP8Config with its defaults) is read; anything else is refused
// by name rather than loaded as something it is not.
bool parse_fp8_quantization(const Reader& config, const std::string& source) {
  if (!config.has("quantization_config")) return false;
  const json& object = config.object("quantization_config");
  check(object.is_object(), source, ": 'quantization_config' must be an object");
  const std::string where = source + ": quantization_config";
  const Reader q(object, where);
  const std::string method = q.string_or("quant_method", "");
  check(method == "fp8", where, ": quant_method '", method, "' is not supported (supported: fp8)");
  const std::string fmt = q.string_or("fmt", "e4m3");
  check(fmt == "e4m3", where, ": fmt '", fmt, "' is not supported (supported: e4m3)");
  const std::string activations = q.string_or("activation_scheme", "dynamic");
  check(activations == "dynamic", where, ": activation_scheme '", activations,
        "' is not supported (supported: dynamic)");
  const std::string scales = q.string_or("scale_fmt", "float");
  check(scales == "float", where, ": scale_fmt '", scales,
        "' is not supported (supported: float, f32 scales)");
  // Absent means FineGrainedFP8Config's default, [128, 128]; null means
  // one scale per tensor.
  if (!q.contains("weight_block_size")) return true;
  const json& block = object["weight_block_size"];
  check(block == json::array({kFp8Block, kFp8Block}), where, ": weight_block_size ", block.dump(),
        " is not supported (supported: [", kFp8Block, ", ", kFp8Block, "])");
  return true;
}

}  // namespace

std::string_view architecture_name(Architecture arch) {
  for (const auto& entry : kArchitectures)
    if (entry.arch == arch) return entry.name;
  return "?";
}

bool ModelConfig::is_moe_layer(int64_t layer) const {
  if (!is_moe() || layer < first_k_dense_replace) return false;
  if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) != mlp_only_layers.end())
    return false;
  return (layer + 1) % decoder_sparse_step == 0;
}

ModelConfig parse_model_config(const json& j, const std::string& source) {
  check(j.is_object(), source, ": must be a JSON object");
  const Reader config(j, source);
  check(config.has("architectures") && j["architectures"].is_array() &&
            !j["architectures"].empty() && j["architectures"][0].is_string(),
        source, ": 'architectures' must be a non-empty list of names");
  const auto arch_name = j["architectures"][0].get<std::string>();
  const auto* entry = std::find_if(std::begin(kArchitectures), std::end(kArchitectures),
                                   [&](const auto& e) { return arch_name == e.name; });
  if (entry == std::end(kArchitectures)) {
    std::string supported;
    for (const auto& e : kArchitectures)
      supported += str_cat(supported.empty() ? "" : ", ", e.name);
    fail(source, ": architecture '", arch_name, "' is not supported (supported: ", supported, ")");
  }

  ModelConfig c;
  c.architecture = entry->arch;
  const Architecture a = c.architecture;
  const bool qwen2_family = a == Architecture::qwen2 || a == Architecture::qwen2_moe;
  const bool qwen3_family = a == Architecture::qwen3 || a == Architecture::qwen3_moe;
  const bool deepseek = a == Architecture::deepseek_v2 || a == Architecture::deepseek_v3;
  c.vocab_size = config.integer("vocab_size");
  c.hidden_size = config.integer("hidden_size");
  c.num_layers = config.integer("num_hidden_layers");
  c.num_heads = config.integer("num_attention_heads");
  c.num_kv_heads = config.integer_or("num_key_value_heads", c.num_heads);
  expect_positive(source, "vocab_size", c.vocab_size, kMaxTokenIndex);
  expect_positive(source, "hidden_size", c.hidden_size);
  expect_positive(source, "num_hidden_layers", c.num_layers);
  expect_positive(source, "num_attention_heads", c.num_heads);
  expect_positive(source, "num_key_value_heads", c.num_kv_heads);
  check(c.num_heads % c.num_kv_heads == 0, source,
        ": num_key_value_heads must divide num_attention_heads (got ", c.num_kv_heads, " and ",
        c.num_heads, ")");
  if (config.has("head_dim")) {
    c.head_dim = config.integer("head_dim");
  } else if (deepseek) {
    c.head_dim = config.integer("qk_rope_head_dim");  // checked with the MLA sizes
  } else if (a == Architecture::qwen3) {
    c.head_dim = 128;  // Qwen3Config's default (Qwen3-MoE's is hidden / heads)
  } else {
    check(c.hidden_size % c.num_heads == 0, source,
          ": hidden_size must be a multiple of num_attention_heads when head_dim is absent (got ",
          c.hidden_size, " and ", c.num_heads, ")");
    c.head_dim = c.hidden_size / c.num_heads;
  }
  check(c.head_dim >= 2 && c.head_dim % 2 == 0, source, ": head_dim must be even and >= 2 (got ",
        c.head_dim, ")");
  expect_positive(source, "head_dim", c.head_dim);
  // Unused by a model whose every layer is MoE, but a value given is checked.
  c.intermediate_size = config.integer_or("intermediate_size", 0);
  if (config.has("intermediate_size"))
    expect_positive(source, "intermediate_size", c.intermediate_size);
  c.rms_norm_eps = config.number_or("rms_norm_eps", 1e-6);
  check(c.rms_norm_eps > 0 && c.rms_norm_eps < 1, source, ": rms_norm_eps must be in (0, 1) (got ",
        c.rms_norm_eps, ")");
  c.rope = parse_rope(config, source);
  c.max_position_embeddings = config.integer_or("max_position_embeddings", 4096);
  expect_positive(source, "max_position_embeddings", c.max_position_embeddings, kMaxTokenIndex);
  c.tie_word_embeddings = config.boolean_or("tie_word_embeddings", false);
  const std::string act = config.string_or("hidden_act", "silu");
  check(act == "silu", source, ": hidden_act '", act, "' is not supported (supported: silu)");

  c.qkv_bias = qwen2_family ? config.boolean_or("qkv_bias", true)
                            : config.boolean_or("attention_bias", false);
  c.o_bias = !qwen2_family && config.boolean_or("attention_bias", false);
  c.qk_norm = qwen3_family;
  check(!config.boolean_or("mlp_bias", false), source, ": mlp_bias is not supported");
  if (deepseek) {
    parse_deepseek(config, source, c);
    // head_dim is the roped part (DeepseekV2Config and DeepseekV3Config set
    // it so): the rope tables are that wide.
    c.head_dim = c.mla->qk_rope_head_dim;
  }

  if (a == Architecture::mistral || a == Architecture::mixtral) {
    // Absent, MistralConfig's default is a 4096-token window (Mixtral's is
    // none); null means full attention.
    const bool absent = !config.contains("sliding_window");
    c.sliding_window =
        a == Architecture::mistral && absent ? 4096 : config.integer_or("sliding_window", 0);
  } else if (config.boolean_or("use_sliding_window", false)) {
    fail(source, ": use_sliding_window is not supported for ", arch_name);
  }
  check(c.sliding_window >= 0 && c.sliding_window <= kMaxTokenIndex, source,
        ": sliding_window must be in [0, ", kMaxTokenIndex, "] (got ", c.sliding_window, ")");

  const bool moe =
      a == Architecture::mixtral || a == Architecture::qwen2_moe || a == Architecture::qwen3_moe;
  if (deepseek) {
    // parse_deepseek read the experts.
  } else if (moe) {
    c.num_experts = config.has("num_local_experts") ? config.integer("num_local_experts")
                                                    : config.integer("num_experts");
    c.num_experts_per_token = config.integer("num_experts_per_tok");
    expect_positive(source, "num_experts", c.num_experts);
    check(c.num_experts_per_token >= 1 && c.num_experts_per_token <= c.num_experts, source,
          ": num_experts_per_tok must be in [1, num_experts=", c.num_experts, "] (got ",
          c.num_experts_per_token, ")");
    if (a == Architecture::mixtral) {
      c.moe_intermediate_size = c.intermediate_size;
      c.norm_topk_prob = true;
    } else {
      c.moe_intermediate_size = config.integer("moe_intermediate_size");
      c.norm_topk_prob = config.boolean_or("norm_topk_prob", false);
      c.decoder_sparse_step = config.integer_or("decoder_sparse_step", 1);
      expect_positive(source, "decoder_sparse_step", c.decoder_sparse_step);
      c.mlp_only_layers = config.integers_or_one("mlp_only_layers");
      for (int64_t layer : c.mlp_only_layers)
        check(layer >= 0 && layer < c.num_layers, source, ": mlp_only_layers entry ", layer,
              " is not a layer index in [0, ", c.num_layers, ")");
    }
    expect_positive(source, "moe_intermediate_size", c.moe_intermediate_size);
    if (a == Architecture::qwen2_moe) {
      // Qwen2MoeConfig's default when absent: a missing key is not "no shared expert".
      c.shared_expert_intermediate_size =
          config.integer_or("shared_expert_intermediate_size", 5632);
      check(c.shared_expert_intermediate_size >= 0 &&
                c.shared_expert_intermediate_size <= kMaxDimension,
            source, ": shared_expert_intermediate_size must be in [0, ", kMaxDimension, "] (got ",
            c.shared_expert_intermediate_size, ")");
    }
  }
  bool needs_dense_mlp = !c.is_moe();
  for (int64_t layer = 0; layer < c.num_layers && !needs_dense_mlp; ++layer)
    needs_dense_mlp = !c.is_moe_layer(layer);
  if (needs_dense_mlp) expect_positive(source, "intermediate_size", c.intermediate_size);

  c.fp8_block_weights = parse_fp8_quantization(config, source);

  c.eos_token_ids = config.integers_or_one("eos_token_id");
  for (const int64_t id : c.eos_token_ids)
    check(id >= 0 && id < c.vocab_size, source, ": eos_token_id ", id, " is not a token id in [0, ",
          c.vocab_size, ")");
  c.bos_token_id = config.integer_or("bos_token_id", -1);
  return c;
}

ModelConfig load_model_config(const std::filesystem::path& model_dir) {
  if (is_gguf_model(model_dir)) return gguf_model_config(GgufFile(model_dir));
  const auto path = model_dir / "config.json";
  ModelConfig c = parse_model_config(read_json_file(path), path.string());
  // Checkpoints often list more end-of-sequence ids in generation_config.json
  // than in config.json (an instruct model's end-of-turn token); HF's
  // generate() and vLLM stop at those too.
  const auto generation = model_dir / "generation_config.json";
  if (std::filesystem::exists(generation)) {
    const json g = read_json_file(generation);
    check(g.is_object(), generation.string(), ": expected a JSON object");
    for (const int64_t id : Reader(g, generation.string()).integers_or_one("eos_token_id")) {
      check(id >= 0 && id < c.vocab_size, generation.string(), ": eos_token_id ", id,
            " is not a token id in [0, ", c.vocab_size, ")");
      if (std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), id) == c.eos_token_ids.end())
        c.eos_token_ids.push_back(id);
    }
    c.generation = parse_generation_defaults(g, generation.string());
  }
  return c;
}

GenerationDefaults parse_generation_defaults(const json& g, const std::string& source) {
  const Reader r(g, source);
  GenerationDefaults d;
  if (r.has("temperature")) {
    const double t = r.number_or("temperature", 0);
    check(t >= 0, source, ": 'temperature' must be >= 0 (got ", t, ")");
    d.temperature = static_cast<float>(t);
  }
  if (r.has("top_k")) {
    const int64_t k = r.integer_or("top_k", 0);
    check(k >= 0 && k <= INT32_MAX, source, ": 'top_k' must be in [0, ", INT32_MAX, "] (got ", k,
          ")");
    d.top_k = static_cast<int>(k);
  }
  if (r.has("top_p")) {
    const double p = r.number_or("top_p", 1);
    check(p > 0 && p <= 1, source, ": 'top_p' must be in (0, 1] (got ", p, ")");
    d.top_p = static_cast<float>(p);
  }
  if (r.has("max_new_tokens")) {
    const int64_t n = r.integer_or("max_new_tokens", 1);
    check(n >= 1 && n <= INT32_MAX, source, ": 'max_new_tokens' must be in [1, ", INT32_MAX,
          "] (got ", n, ")");
    d.max_new_tokens = n;
  }
  if (r.has("min_p")) {
    const double p = r.number_or("min_p", 0);
    check(p >= 0 && p <= 1, source, ": 'min_p' must be in [0, 1] (got ", p, ")");
    d.min_p = static_cast<float>(p);
  }
  if (r.has("repetition_penalty")) {
    const double p = r.number_or("repetition_penalty", 1);
    check(p > 0 && p <= std::numeric_limits<float>::max(), source,
          ": 'repetition_penalty' must be > 0 (got ", p, ")");
    d.repetition_penalty = static_cast<float>(p);
  }
  if (r.has("do_sample") && !r.boolean_or("do_sample", true)) d.temperature = 0.0f;
  // Keys whose value changes sampling, with the value that does not.
  for (const auto& [key, neutral] :
       {std::pair{"typical_p", 1.0}, std::pair{"no_repeat_ngram_size", 0.0},
        std::pair{"num_beams", 1.0}})
    if (r.has(key) && r.number_or(key, neutral) != neutral) d.ignored.emplace_back(key);
  return d;
}

SamplingParams GenerationDefaults::sampling() const {
  SamplingParams p;
  if (temperature) p.temperature = *temperature;
  if (top_k) p.top_k = *top_k;
  if (top_p) p.top_p = *top_p;
  if (min_p) p.min_p = *min_p;
  if (repetition_penalty) p.repetition_penalty = *repetition_penalty;
  return p;
}

}  // namespace hive
