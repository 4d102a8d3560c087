#include "runtime/model/deepseek_config.hpp"

#include "runtime/model/config_reader.hpp"

namespace hive {

using config_reader::expect_positive;
using config_reader::kMaxDimension;

// DeepSeek-V3: MLA sizes, routed and shared experts, grouped routing.
void parse_deepseek(const config_reader::Reader& config, const std::string& source,
                    ModelConfig& c) {
  MlaConfig m;
  m.q_lora_rank = config.integer_or("q_lora_rank", 0);  // null: no q compression
  m.kv_lora_rank = config.integer("kv_lora_rank");
  m.qk_nope_head_dim = config.integer("qk_nope_head_dim");
  m.qk_rope_head_dim = config.integer("qk_rope_head_dim");
  m.v_head_dim = config.integer("v_head_dim");
  m.rope_interleave = config.boolean_or("rope_interleave", true);
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
  c.mla = m;
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
  c.norm_topk_prob = config.boolean_or("norm_topk_prob", true);
  c.first_k_dense_replace = config.integer_or("first_k_dense_replace", 0);
  check(c.first_k_dense_replace >= 0 && c.first_k_dense_replace <= c.num_layers, source,
        ": first_k_dense_replace must be in [0, ", c.num_layers, "] (got ", c.first_k_dense_replace,
        ")");
  for (const char* key : {"topk_method", "scoring_func"}) {
    const std::string value = config.string_or(key, "");
    check(value.empty() || value == "noaux_tc" || value == "sigmoid", source, ": ", key, " '",
          value, "' is not supported (DeepSeek-V3 routes with noaux_tc over sigmoid scores)");
  }
  GroupedRouting g;
  g.n_group = config.integer_or("n_group", 1);
  g.topk_group = config.integer_or("topk_group", 1);
  g.routed_scaling_factor = config.number_or("routed_scaling_factor", 1.0);
  expect_positive(source, "n_group", g.n_group);
  check(c.num_experts % g.n_group == 0 && c.num_experts / g.n_group >= 2, source,
        ": n_group must divide n_routed_experts into groups of >= 2 (got ", g.n_group, " and ",
        c.num_experts, ")");
  check(g.topk_group >= 1 && g.topk_group <= g.n_group, source, ": topk_group must be in [1, ",
        g.n_group, "] (got ", g.topk_group, ")");
  const int64_t reachable = g.topk_group * (c.num_experts / g.n_group);
  check(c.num_experts_per_token >= 1 && c.num_experts_per_token <= reachable, source,
        ": num_experts_per_tok must be in [1, ", reachable,
        "] (the experts of topk_group groups; got ", c.num_experts_per_token, ")");
  check(g.routed_scaling_factor > 0, source, ": routed_scaling_factor must be > 0 (got ",
        g.routed_scaling_factor, ")");
  c.grouped_routing = g;
}

}  // namespace hive
