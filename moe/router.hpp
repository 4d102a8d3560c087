#pragma once
// Top-k routing of tokens to experts. Three rules:
//   softmax (Mixtral, Qwen2-MoE, Qwen3-MoE): softmax over all expert logits,
//     keep the k largest, and (when normalize_top_k) rescale the kept
//     weights to sum to 1;
//   grouped sigmoid (DeepSeek-V3's noaux_tc): scores = sigmoid(logits); the
//     experts are chosen by score + a per-expert correction bias, only from
//     the topk_group groups (of n_group) whose two best biased scores sum
//     highest; the weights are the unbiased scores of the chosen experts,
//     normalised when normalize_top_k, times routed_scaling_factor;
//   grouped softmax (DeepSeek-V2's group_limited_greedy; its greedy is one
//     group): scores = softmax(logits), no bias; only from the topk_group
//     groups whose best score is highest; weights as for grouped sigmoid.
#include "kernels/backend.hpp"

namespace hive {

enum class RoutingRule { softmax, grouped_sigmoid, grouped_softmax };

struct RouterConfig {
  int num_experts = 0;
  int top_k = 0;
  bool normalize_top_k = true;
  RoutingRule rule = RoutingRule::softmax;
  int n_group = 1;
  int topk_group = 1;
  float routed_scaling_factor = 1.0f;
};

// router_logits [n, num_experts] f32 (overwritten with probabilities or
// scores); weights [n, top_k] f32 and expert_ids [n, top_k] i32 receive the
// result. score_bias [num_experts] (f32), grouped sigmoid's correction bias.
void route_tokens(Backend& backend, const Tensor& router_logits, const RouterConfig& config,
                  const Tensor& weights, const Tensor& expert_ids,
                  const Tensor* score_bias = nullptr);

// A grouped rule's choice for one token, on the host: `scores` are the
// sigmoid scores or softmax probabilities, `bias` the correction (or null).
// Writes top_k ids (best biased score first; ties to the lower index) and
// their weights.
void route_grouped(const float* scores, const float* bias, const RouterConfig& config, int32_t* ids,
                   float* weights);

}  // namespace hive
