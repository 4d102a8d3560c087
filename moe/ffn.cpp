#include "moe/ffn.hpp"

#include "base/error.hpp"
#include "kernels/buffer.hpp"
#include "moe/dispatch_plan.hpp"

namespace hive {

void ffn_forward(Backend& backend, const Tensor& x, const FfnWeights& weights, const Tensor& out) {
  const int64_t n = x.shape[0], inter = weights.intermediate_size();
  Buffer gate(backend, DType::f32, {n, inter});
  Buffer up(backend, DType::f32, {n, inter});
  const MatmulProblem gate_up[] = {{x, weights.gate, nullptr, gate.tensor()},
                                   {x, weights.up, nullptr, up.tensor()}};
  backend.matmul_group(gate_up);
  backend.silu_mul(gate.tensor(), up.tensor(), gate.tensor());
  backend.matmul(gate.tensor(), weights.down, nullptr, out);
}

namespace {

// Rows of one group of experts at most: bounds the gathered and intermediate
// activations a long prefill holds at once.
constexpr int64_t kMaxGroupRows = 4096;

// The FFNs of experts [first, last] of the plan, whose rows are one
// contiguous range of it: the range's rows of x gathered in one op, every
// gate and up projection as one grouped matmul, one silu_mul over all their
// intermediates, every down projection as another grouped matmul, and one
// scatter of the range in plan order (the order the one-expert-at-a-time
// loop added them in, so `out` gets the same bits). Each expert's rows are a
// slice of the group's buffers.
void run_group(Backend& backend, const Tensor& x, const DispatchPlan& plan, int first, int last,
               std::span<const FfnWeights> experts, const Tensor& token_index,
               const Tensor& token_weight, const Tensor& out) {
  const int64_t hidden = x.shape[1];
  const int64_t begin = plan.expert_offsets[static_cast<size_t>(first)];
  const int64_t rows = plan.expert_offsets[static_cast<size_t>(last) + 1] - begin;
  int64_t intermediates = 0;  // of the whole group (experts may differ in size)
  for (int e = first; e <= last; ++e)
    intermediates += plan.count(e) * experts[static_cast<size_t>(e)].intermediate_size();
  Buffer gathered(backend, DType::f32, {rows, hidden});
  Buffer computed(backend, DType::f32, {rows, hidden});
  Buffer gate(backend, DType::f32, {intermediates});
  Buffer up(backend, DType::f32, {intermediates});
  backend.gather_rows(x, token_index.rows(begin, rows), gathered.tensor());

  std::vector<MatmulProblem> gate_up, down;
  int64_t offset = 0;  // into gate and up, in floats
  for (int e = first; e <= last; ++e) {
    const int64_t count = plan.count(e);
    if (count == 0) continue;
    const FfnWeights& w = experts[static_cast<size_t>(e)];
    const int64_t inter = w.intermediate_size();
    const int64_t row = plan.expert_offsets[static_cast<size_t>(e)] - begin;
    const Tensor x_rows = gathered.tensor().rows(row, count);
    const Tensor gate_rows =
        Tensor::view(gate.tensor().as<float>() + offset, DType::f32, {count, inter}, x.device);
    const Tensor up_rows =
        Tensor::view(up.tensor().as<float>() + offset, DType::f32, {count, inter}, x.device);
    gate_up.push_back({x_rows, w.gate, nullptr, gate_rows});
    gate_up.push_back({x_rows, w.up, nullptr, up_rows});
    down.push_back({gate_rows, w.down, nullptr, computed.tensor().rows(row, count)});
    offset += count * inter;
  }
  backend.matmul_group(gate_up);
  backend.silu_mul(gate.tensor(), up.tensor(), gate.tensor());
  backend.matmul_group(down);
  backend.scatter_add_rows(computed.tensor(), token_index.rows(begin, rows),
                           token_weight.rows(begin, rows), out);
}

}  // namespace

void experts_forward(Backend& backend, const Tensor& x, const DispatchPlan& plan,
                     const Tensor& token_index, const Tensor& token_weight,
                     std::span<const FfnWeights> experts, const Tensor& out) {
  const int num_experts = static_cast<int>(plan.expert_offsets.size()) - 1;
  int first = 0;  // the group's first expert
  int64_t group_rows = 0;
  for (int e = 0; e < num_experts; ++e) {
    group_rows += plan.count(e);
    if (group_rows >= kMaxGroupRows || e + 1 == num_experts) {
      if (group_rows > 0)
        run_group(backend, x, plan, first, e, experts, token_index, token_weight, out);
      first = e + 1;
      group_rows = 0;
    }
  }
}

void moe_forward(Backend& backend, const Tensor& x, const MoeWeights& weights,
                 const RouterConfig& router, const Tensor& out) {
  const int64_t n = x.shape[0];
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
  experts_forward(backend, x, plan, token_index.tensor(), token_weight.tensor(), weights.experts,
                  out);

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
