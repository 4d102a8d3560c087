#include "runtime/loader/deepseek_config.hpp"

#include "runtime/loader/config_reader.hpp"

namespace hive {

using config_reader::expect_positive;
using config_reader::kMaxDimension;

namespace {

MlaConfig parse_mla(const config_reader::Reader& config, const std::string& source, bool v2) {
  MlaConfig m;
  m.q_lora_rank = config.integer_or("q_lora_rank", 0);  // null: no q compression
  m.kv_lora_rank = config.integer("kv_lora_rank");
  m.qk_nope_head_dim = config.integer("qk_nope_head_dim");
  m.qk_rope_head_dim = config.integer("qk_rope_head_dim");
  m.v_head_dim = config.integer("v_head_dim");
  // V2 always ropes interleaved pairs (transformers multiplies them as
  // complex numbers) and has no key for it: a false would be ignored there.
  m.rope_interleave = config.boolean_or("rope_interleave", true);
  check(!v2 || m.rope_interleave, source,
        ": rope_interleave false is not supported for DeepseekV2ForCausalLM (its rope is "
        "always interleaved)");
  if (m.q_lora_rank != 0) expect_positive(source, "q_lora_rank", m.q_lora_rank);
  expect_positive(source, "kv_lora_rank", m.kv_lora_rank);
  expect_positive(source, "qk_nope_head_dim", m.qk_nope_head_dim);
  expect_positive(source, "qk_rope_head_dim", m.qk_rope_head_dim);
  expect_positive(source, "v_head_dim", m.v_head_dim);
  // The cache row splits both parts in halves (mla_attention.hpp).
  check(m.kv_lora_rank % 2 == 0 && m.qk_rope_head_dim % 2 == 0, source,
        ": kv_lora_rank and qk_rope_head_dim must be even (got ", m.kv_lora_rank, " and ",
        m.qk_rope_head_dim, ")");
  check(!config.boolean_or("attention_bias", false), source,
        ": attention_bias is not supported for DeepSeek");
  return m;
}

// The routing keys of each version, with their transformers defaults.
// V2's greedy is plain top-k over the softmax: one group, whatever n_group
// says (transformers reads it only for group_limited_greedy).
GroupedRouting parse_routing(const config_reader::Reader& config, const std::string& source,
                             bool v2) {
  GroupedRouting g;
  g.softmax = v2;
  const std::string method = config.string_or("topk_method", v2 ? "greedy" : "noaux_tc");
  const std::string scoring = config.string_or("scoring_func", v2 ? "softmax" : "sigmoid");
  if (v2) {
    check(method == "greedy" || method == "group_limited_greedy", source, ": topk_method '", method,
          "' is not supported for DeepseekV2ForCausalLM (supported: greedy, ",
          "group_limited_greedy)");
    check(scoring == "softmax", source, ": scoring_func '", scoring,
          "' is not supported (DeepSeek-V2 routes over softmax probabilities)");
  } else {
    check(method == "noaux_tc" && scoring == "sigmoid", source, ": ",
          method != "noaux_tc" ? "topk_method" : "scoring_func", " '",
          method != "noaux_tc" ? method : scoring,
          "' is not supported (DeepSeek-V3 routes with noaux_tc over sigmoid scores)");
  }
  if (method == "group_limited_greedy") {
    // DeepseekV2Config has no default for these.
    g.n_group = config.integer("n_group");
    g.topk_group = config.integer("topk_group");
  } else if (!v2) {
    g.n_group = config.integer_or("n_group", 1);
    g.topk_group = config.integer_or("topk_group", 1);
  }
  g.routed_scaling_factor = config.number_or("routed_scaling_factor", 1.0);
  check(g.routed_scaling_factor > 0, source, ": routed_scaling_factor must be > 0 (got ",
        g.routed_scaling_factor, ")");
  return g;
}

}  // namespace

// DeepSeek-V2/V3: MLA sizes, routed and shared experts, grouped routing.
void parse_deepseek(const config_reader::Reader& config, const std::string& source,
                    ModelConfig& c) {
  const bool v2 = c.architecture == Architecture::deepseek_v2;
  c.mla = parse_mla(config, source, v2);
  c.qkv_bias = c.o_bias = false;

  c.num_experts = config.integer("n_routed_experts");
  c.num_experts_per_token = config.integer("num_experts_per_tok");
  c.moe_intermediate_size = config.integer("moe_intermediate_size");
  expect_positive(source, "n_routed_experts", c.num_experts);
  expect_positive(source, "moe_intermediate_size", c.moe_intermediate_size);
  const int64_t shared = config.integer_or("n_shared_experts", 0);
  check(shared >= 0 && shared <= kMaxDimension, source, ": n_shared_experts must be >= 0 (got ",
        shared, ")");
  c.shared_expert_intermediate_size = shared * c.moe_intermediate_size;
  c.shared_expert_gated = false;
  // transformers' V2 router never normalises (it ignores the key); DeepSeek's
  // own V2 code normalises instead of scaling. Released V2 checkpoints say
  // false, where the two agree; true is refused rather than guessed.
  c.norm_topk_prob = config.boolean_or("norm_topk_prob", !v2);
  check(!v2 || !c.norm_topk_prob, source,
        ": norm_topk_prob true is not supported for DeepseekV2ForCausalLM (transformers ignores "
        "it, DeepSeek's code normalises instead of scaling)");
  c.first_k_dense_replace = config.integer_or("first_k_dense_replace", 0);
  check(c.first_k_dense_replace >= 0 && c.first_k_dense_replace <= c.num_layers, source,
        ": first_k_dense_replace must be in [0, ", c.num_layers, "] (got ", c.first_k_dense_replace,
        ")");
  // transformers makes every layer from first_k_dense_replace on MoE;
  // DeepSeek's own code would skip layers by this step.
  const int64_t moe_layer_freq = config.integer_or("moe_layer_freq", 1);
  check(moe_layer_freq == 1, source, ": moe_layer_freq ", moe_layer_freq,
        " is not supported (only 1: every layer from first_k_dense_replace on is MoE)");

  const GroupedRouting g = parse_routing(config, source, v2);
  expect_positive(source, "n_group", g.n_group);
  // A V3 group is scored by its two best experts.
  const int64_t min_per_group = v2 ? 1 : 2;
  check(c.num_experts % g.n_group == 0 && c.num_experts / g.n_group >= min_per_group, source,
        ": n_group must divide n_routed_experts into groups of >= ", min_per_group, " (got ",
        g.n_group, " and ", c.num_experts, ")");
  check(g.topk_group >= 1 && g.topk_group <= g.n_group, source, ": topk_group must be in [1, ",
        g.n_group, "] (got ", g.topk_group, ")");
  const int64_t reachable = g.topk_group * (c.num_experts / g.n_group);
  check(c.num_experts_per_token >= 1 && c.num_experts_per_token <= reachable, source,
        ": num_experts_per_tok must be in [1, ", reachable,
        "] (the experts of topk_group groups; got ", c.num_experts_per_token, ")");
  c.grouped_routing = g;
}

}  // namespace hive
