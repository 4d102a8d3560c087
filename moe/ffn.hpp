#pragma once
// The SwiGLU feed-forward block (down(silu(gate(x)) * up(x))) of dense
// layers, of each expert and of shared experts, and the MoE layer built on it.
#include <optional>
#include <span>
#include <vector>

#include "kernels/backend.hpp"
#include "moe/dispatch_plan.hpp"
#include "moe/router.hpp"

namespace hive {

struct FfnWeights {
  Tensor gate;  // [intermediate, hidden]
  Tensor up;    // [intermediate, hidden]
  Tensor down;  // [hidden, intermediate]

  int64_t intermediate_size() const { return gate.shape[0]; }
};

struct MoeWeights {
  Tensor router;                    // [num_experts, hidden]
  std::vector<FfnWeights> experts;  // one per expert
  bool has_shared_expert = false;   // Qwen2-MoE, DeepSeek
  FfnWeights shared_expert;
  std::optional<Tensor> shared_expert_gate;     // [1, hidden]: Qwen2-MoE's sigmoid gate
  std::optional<Tensor> score_correction_bias;  // [num_experts]: DeepSeek-V3's router
};

// out = ffn(x). x [n, hidden], out [n, hidden] f32.
void ffn_forward(Backend& backend, const Tensor& x, const FfnWeights& weights, const Tensor& out);

// out[token_index[i]] += token_weight[i] * expert(x[token_index[i]]) for
// every assignment i of the plan, its expert's rows after the expert's
// offset: the experts' gate and up projections as one grouped matmul, their
// down projections as another (in groups of a few thousand rows), the
// results added in expert order. token_index, token_weight: the plan's, on
// the backend.
void experts_forward(Backend& backend, const Tensor& x, const DispatchPlan& plan,
                     const Tensor& token_index, const Tensor& token_weight,
                     std::span<const FfnWeights> experts, const Tensor& out);

// out = sum over the chosen experts of weight * expert(x) (+ the gated shared
// expert). x [n, hidden], out [n, hidden] f32.
void moe_forward(Backend& backend, const Tensor& x, const MoeWeights& weights,
                 const RouterConfig& router, const Tensor& out);

// out += sigmoid(x @ shared_expert_gate^T) * shared_expert(x)  (Qwen2-MoE),
// or out += shared_expert(x) when there is no gate (DeepSeek).
void add_shared_expert(Backend& backend, const Tensor& x, const MoeWeights& weights,
                       const Tensor& out);

}  // namespace hive
