#include "moe/ffn.hpp"

#include "kernels/buffer.hpp"
#include "kernels/error.hpp"
#include "moe/dispatch_plan.hpp"

namespace hive {

void ffn_forward(Backend& backend, const Tensor& x, const FfnWeights& weights, const Tensor& out) {
  const int64_t n = x.shape[0], inter = weights.intermediate_size();
  Buffer gate(backend, DType::f32, {n, inter});
  Buffer up(backend, DType::f32, {n, inter});
  backend.matmul(x, weights.gate, nullptr, gate.tensor());
  backend.matmul(x, weights.up, nullptr, up.tensor());
  backend.silu_mul(gate.tensor(), up.tensor(), gate.tensor());
  backend.matmul(gate.tensor(), weights.down, nullptr, out);
}

void moe_forward(Backend& backend, const Tensor& x, const MoeWeights& weights,
                 const RouterConfig& router, const Tensor& out) {
  const int64_t n = x.shape[0], hidden = x.shape[1];
  const int k = router.top_k;
  Buffer logits(backend, DType::f32, {n, router.num_experts});
  Buffer routing_weights(backend, DType::f32, {n, k});
  Buffer expert_ids(backend, DType::i32, {n, k});
  const Tensor& ids = expert_ids.tensor();
  backend.matmul(x, weights.router, nullptr, logits.tensor());
  route_tokens(backend, logits.tensor(), router, routing_weights.tensor(), ids,
               weights.score_correction_bias ? &*weights.score_correction_bias : nullptr);

  // The plan is made on the host: it is a few integers per token.
  const auto host_ids = download<int32_t>(backend, ids);
  const auto host_weights = download<float>(backend, routing_weights.tensor());
  const DispatchPlan plan = plan_dispatch(host_ids, host_weights, k, router.num_experts);

  backend.fill(out, 0.0f);
  const Buffer token_index = upload<int32_t>(backend, plan.token_index, DType::i32);
  const Buffer token_weight = upload<float>(backend, plan.weight, DType::f32);
  for (int e = 0; e < router.num_experts; ++e) {
    const int64_t count = plan.count(e);
    if (count == 0) continue;
    const int64_t begin = plan.expert_offsets[static_cast<size_t>(e)];
    const Tensor rows = token_index.tensor().rows(begin, count);
    Buffer gathered(backend, DType::f32, {count, hidden});
    Buffer expert_out(backend, DType::f32, {count, hidden});
    backend.gather_rows(x, rows, gathered.tensor());
    ffn_forward(backend, gathered.tensor(), weights.experts[static_cast<size_t>(e)],
                expert_out.tensor());
    backend.scatter_add_rows(expert_out.tensor(), rows, token_weight.tensor().rows(begin, count),
                             out);
  }

  if (weights.has_shared_expert) add_shared_expert(backend, x, weights, out);
}

void add_shared_expert(Backend& backend, const Tensor& x, const MoeWeights& weights,
                       const Tensor& out) {
  const int64_t n = x.shape[0], hidden = x.shape[1];
  Buffer shared(backend, DType::f32, {n, hidden});
  Buffer gate(backend, DType::f32, {n, 1});
  ffn_forward(backend, x, weights.shared_expert, shared.tensor());
  if (weights.shared_expert_gate) {
    backend.matmul(x, *weights.shared_expert_gate, nullptr, gate.tensor());
    backend.sigmoid(gate.tensor());
    backend.mul_rows(shared.tensor(), gate.view(DType::f32, {n}));
  }
  backend.add(out, shared.tensor(), out);
}

}  // namespace hive
