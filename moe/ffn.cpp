#include "moe/ffn.hpp"

#include "kernels/buffer.hpp"
#include "kernels/error.hpp"
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

// One expert's share of a group: its rows of x gathered, its FFN's
// intermediates and result.
struct ExpertRows {
  int expert = 0;
  int64_t begin = 0, count = 0;  // its slice of the plan
  Buffer gathered, gate, up, computed;
};

// The FFNs of a group of experts: every gate and up projection as one grouped
// matmul, then every down projection as another, then the scatters in expert
// order (the order the one-expert-at-a-time loop added them in, so `out`
// gets the same bits).
void run_group(Backend& backend, std::vector<ExpertRows>& group,
               std::span<const FfnWeights> experts, const Tensor& token_index,
               const Tensor& token_weight, const Tensor& out) {
  std::vector<MatmulProblem> problems;
  for (ExpertRows& r : group) {
    const FfnWeights& w = experts[static_cast<size_t>(r.expert)];
    problems.push_back({r.gathered.tensor(), w.gate, nullptr, r.gate.tensor()});
    problems.push_back({r.gathered.tensor(), w.up, nullptr, r.up.tensor()});
  }
  backend.matmul_group(problems);
  problems.clear();
  for (ExpertRows& r : group) {
    backend.silu_mul(r.gate.tensor(), r.up.tensor(), r.gate.tensor());
    problems.push_back({r.gate.tensor(), experts[static_cast<size_t>(r.expert)].down, nullptr,
                        r.computed.tensor()});
  }
  backend.matmul_group(problems);
  for (ExpertRows& r : group)
    backend.scatter_add_rows(r.computed.tensor(), token_index.rows(r.begin, r.count),
                             token_weight.rows(r.begin, r.count), out);
  group.clear();
}

}  // namespace

void experts_forward(Backend& backend, const Tensor& x, const DispatchPlan& plan,
                     const Tensor& token_index, const Tensor& token_weight,
                     std::span<const FfnWeights> experts, const Tensor& out) {
  const int64_t hidden = x.shape[1];
  std::vector<ExpertRows> group;
  int64_t group_rows = 0;
  for (int e = 0; e + 1 < static_cast<int>(plan.expert_offsets.size()); ++e) {
    const int64_t count = plan.count(e);
    if (count == 0) continue;
    const int64_t inter = experts[static_cast<size_t>(e)].intermediate_size();
    ExpertRows& r = group.emplace_back();
    r.expert = e;
    r.begin = plan.expert_offsets[static_cast<size_t>(e)];
    r.count = count;
    r.gathered = Buffer(backend, DType::f32, {count, hidden});
    r.gate = Buffer(backend, DType::f32, {count, inter});
    r.up = Buffer(backend, DType::f32, {count, inter});
    r.computed = Buffer(backend, DType::f32, {count, hidden});
    backend.gather_rows(x, token_index.rows(r.begin, count), r.gathered.tensor());
    group_rows += count;
    if (group_rows >= kMaxGroupRows) {
      run_group(backend, group, experts, token_index, token_weight, out);
      group_rows = 0;
    }
  }
  if (!group.empty()) run_group(backend, group, experts, token_index, token_weight, out);
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
