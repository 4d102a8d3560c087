#pragma once
// Top-k routing of tokens to experts, as Mixtral, Qwen2-MoE and Qwen3-MoE do
// it: softmax over all expert logits, keep the k largest, and (when
// normalize_top_k) rescale the kept weights to sum to 1.
#include "kernels/backend.hpp"

namespace hive {

struct RouterConfig {
  int num_experts = 0;
  int top_k = 0;
  bool normalize_top_k = true;
};

// router_logits [n, num_experts] f32 (overwritten with probabilities);
// weights [n, top_k] f32 and expert_ids [n, top_k] i32 receive the result.
void route_tokens(Backend& backend, const Tensor& router_logits, const RouterConfig& config,
                  const Tensor& weights, const Tensor& expert_ids);

}  // namespace hive
