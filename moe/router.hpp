#pragma once
// Top-k routing of tokens to experts. Two rules:
//   softmax (Mixtral, Qwen2-MoE, Qwen3-MoE): softmax over all expert logits,
//     keep the k largest, and (when normalize_top_k) rescale the kept
//     weights to sum to 1;
//   grouped sigmoid (DeepSeek-V3's noaux_tc): scores = sigmoid(logits); the
//     experts are chosen by score + a per-expert correction bias, only from
//     the topk_group groups (of n_group) whose two best biased scores sum
//     highest; the weights are the unbiased scores of the chosen experts,
//     normalised when normalize_top_k, times routed_scaling_factor.
#include "kernels/backend.hpp"

namespace hive {

struct RouterConfig {
  int num_experts = 0;
  int top_k = 0;
  bool normalize_top_k = true;
  bool grouped_sigmoid = false;
  int n_group = 1;
  int topk_group = 1;
  float routed_scaling_factor = 1.0f;
};

// router_logits [n, num_experts] f32 (overwritten with probabilities or
// scores); weights [n, top_k] f32 and expert_ids [n, top_k] i32 receive the
// result. score_bias [num_experts] (f32), the grouped rule's correction bias.
void route_tokens(Backend& backend, const Tensor& router_logits, const RouterConfig& config,
                  const Tensor& weights, const Tensor& expert_ids,
                  const Tensor* score_bias = nullptr);

// The grouped-sigmoid choice for one token, on the host: `scores` are the
// sigmoid scores, `bias` the correction. Writes top_k ids (best biased score
// first; ties to the lower index) and their weights.
void route_grouped(const float* scores, const float* bias, const RouterConfig& config, int32_t* ids,
                   float* weights);

}  // namespace hive
