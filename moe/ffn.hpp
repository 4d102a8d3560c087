#pragma once
// The SwiGLU feed-forward block (down(silu(gate(x)) * up(x))) of dense
// layers, of each expert and of shared experts, and the MoE layer built on it.
#include <vector>

#include "kernels/backend.hpp"
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
  bool has_shared_expert = false;   // Qwen2-MoE
  FfnWeights shared_expert;
  Tensor shared_expert_gate;  // [1, hidden]: sigmoid gate on the shared expert
};

// out = ffn(x). x [n, hidden], out [n, hidden] f32.
void ffn_forward(Backend& backend, const Tensor& x, const FfnWeights& weights, const Tensor& out);

// out = sum over the chosen experts of weight * expert(x) (+ the gated shared
// expert). x [n, hidden], out [n, hidden] f32.
void moe_forward(Backend& backend, const Tensor& x, const MoeWeights& weights,
                 const RouterConfig& router, const Tensor& out);

// out += sigmoid(x @ shared_expert_gate^T) * shared_expert(x)  (Qwen2-MoE).
void add_shared_expert(Backend& backend, const Tensor& x, const MoeWeights& weights,
                       const Tensor& out);

}  // namespace hive
