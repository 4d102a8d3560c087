// hive inspect: what a checkpoint holds and what it costs to run.
#include <cstdio>

#include "kernels/backend_select.hpp"
#include "kernels/cpu/cpu_features.hpp"
#include "runtime/loader/weight_store.hpp"
#include "runtime/model/model_stats.hpp"
#include "runtime/model/model_weights.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"

namespace hive::cli {

int run_inspect(const std::vector<std::string>& argv) {
  const Args args(argv, {"--model"}, {"--devices"});
  if (args.has("--devices")) {
    std::printf("devices: %s\n", describe_devices().c_str());
    std::printf("cpu kernels: %s (cap with HIVE_CPU_ISA)\n",
                std::string(cpu::cpu_kernel_path_name()).c_str());
    std::printf("matmul precision: %s%s (HIVE_MATMUL_PRECISION=f32|bf16)\n",
                std::string(cpu::matmul_precision_name(cpu::matmul_precision())).c_str(),
                cpu::matmul_precision() == cpu::MatmulPrecision::bf16 && !cpu::bf16_matmul_active()
                    ? ", but this path has no vdpbf16ps: f32 runs"
                    : "");
    if (!args.has("--model")) return 0;
  }
  const std::string dir = args.require("--model");
  const ModelConfig config = load_model_config(dir);
  const WeightStore store(dir, config);
  // The config must describe these weights, as for generate: every tensor
  // it implies present with its shape. Counts from a config the weights
  // contradict would be wrong answers.
  bind_weights(config, store);
  const ModelStats stats = model_stats(config, store);
  std::printf("architecture:         %s\n",
              std::string(architecture_name(config.architecture)).c_str());
  std::printf(
      "layers:               %lld (hidden %lld, heads %lld, kv heads %lld, head_dim %lld)\n",
      static_cast<long long>(config.num_layers), static_cast<long long>(config.hidden_size),
      static_cast<long long>(config.num_heads), static_cast<long long>(config.num_kv_heads),
      static_cast<long long>(config.head_dim));
  if (const auto& m = config.mla)
    std::printf(
        "attention:            MLA (q_lora_rank %lld, kv_lora_rank %lld, qk_nope %lld, "
        "qk_rope %lld, v_head_dim %lld)\n",
        static_cast<long long>(m->q_lora_rank), static_cast<long long>(m->kv_lora_rank),
        static_cast<long long>(m->qk_nope_head_dim), static_cast<long long>(m->qk_rope_head_dim),
        static_cast<long long>(m->v_head_dim));
  if (config.is_moe())
    std::printf("experts:              %lld, top-%lld per token\n",
                static_cast<long long>(config.num_experts),
                static_cast<long long>(config.num_experts_per_token));
  if (const auto& g = config.grouped_routing)
    std::printf(
        "routing:              %s, %lld groups, top-%lld groups, scaled by %g; %lld shared, "
        "first %lld layers dense\n",
        g->softmax ? "softmax" : "sigmoid + correction bias", static_cast<long long>(g->n_group),
        static_cast<long long>(g->topk_group), g->routed_scaling_factor,
        static_cast<long long>(config.shared_expert_intermediate_size /
                               config.moe_intermediate_size),
        static_cast<long long>(config.first_k_dense_replace));
  std::printf("vocab:                %lld\n", static_cast<long long>(config.vocab_size));
  std::printf("parameters:           %lld total\n", static_cast<long long>(stats.total_parameters));
  std::printf("active per token:     %lld\n", static_cast<long long>(stats.active_parameters));
  std::printf("weight bytes:         %lld\n", static_cast<long long>(stats.weight_bytes));
  std::printf("KV bytes per token:   %lld (f32), %lld (bf16/f16)\n",
              static_cast<long long>(config.kv_bytes_per_token(4)),
              static_cast<long long>(config.kv_bytes_per_token(2)));
  if (config.mla)
    std::printf("  plain MHA would use: %lld (f32), %lld (bf16/f16): MLA caches %.1fx less\n",
                static_cast<long long>(config.mha_kv_bytes_per_token(4)),
                static_cast<long long>(config.mha_kv_bytes_per_token(2)),
                static_cast<double>(config.mha_kv_bytes_per_token(4)) /
                    static_cast<double>(config.kv_bytes_per_token(4)));
  return 0;
}

}  // namespace hive::cli
