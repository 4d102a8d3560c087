#include "moe/expert_parallel.hpp"

#include <algorithm>
#include <numeric>
#include <tuple>

#include "base/error.hpp"
#include "kernels/buffer.hpp"
#include "moe/dispatch_plan.hpp"

namespace hive {

namespace {

// One (token, chosen expert) pair of this rank, in the order rows are sent.
struct Assignment {
  int target_rank;
  int32_t expert;
  int32_t token;
  float weight;
};

std::vector<Assignment> plan_assignments(const std::vector<int32_t>& ids,
                                         const std::vector<float>& weights, int top_k,
                                         const ExpertPlacement& placement, int rank) {
  std::vector<Assignment> list;
  // How many of this rank's tokens went to each expert so far: a token's
  // turn among the expert's holders.
  std::vector<int64_t> nth(static_cast<size_t>(placement.num_experts()), 0);
  for (size_t a = 0; a < ids.size(); ++a)
    list.push_back({placement.target_rank(ids[a], rank, nth[static_cast<size_t>(ids[a])]++), ids[a],
                    static_cast<int32_t>(a / static_cast<size_t>(top_k)), weights[a]});
  std::stable_sort(list.begin(), list.end(), [](const Assignment& a, const Assignment& b) {
    return std::tie(a.target_rank, a.expert, a.token) < std::tie(b.target_rank, b.expert, b.token);
  });
  return list;
}

// Runs this rank's experts over the rows it received; results keep row order.
Buffer compute_received(Backend& backend, const Tensor& rows, const std::vector<int32_t>& experts,
                        const MoeWeights& weights, const ExpertPlacement& placement, int rank) {
  const int64_t m = rows.shape[0], hidden = rows.shape[1];
  Buffer results(backend, DType::f32, {m, hidden});
  if (m == 0) return results;
  backend.fill(results.tensor(), 0.0f);
  const std::vector<float> ones(experts.size(), 1.0f);
  const DispatchPlan plan = plan_dispatch(experts, ones, 1, placement.num_experts());
  const Buffer row_index = upload<int32_t>(backend, plan.token_index, DType::i32);
  const Buffer unit = upload<float>(backend, plan.weight, DType::f32);
  for (int e = 0; e < placement.num_experts(); ++e)
    check(plan.count(e) == 0 || placement.holds(rank, e), "rank ", rank,
          " received rows for expert ", e, ", which it does not hold");
  experts_forward(backend, rows, plan, row_index.tensor(), unit.tensor(), weights.experts,
                  results.tensor());
  return results;
}

}  // namespace

void moe_forward_expert_parallel(Backend& backend, Communicator& comm,
                                 const ExpertPlacement& placement, const Tensor& x,
                                 const MoeWeights& weights, const RouterConfig& router,
                                 const Tensor& out, std::vector<int64_t>* expert_load,
                                 std::vector<int64_t>* remote_load,
                                 std::vector<int64_t>* computed_load) {
  const int64_t n = x.shape[0], hidden = x.shape[1];
  const int k = router.top_k, world = comm.world_size(), rank = comm.rank();
  check(placement.world_size() == world && placement.num_experts() == router.num_experts,
        "expert placement for ", placement.num_experts(), " experts on ", placement.world_size(),
        " ranks used with ", router.num_experts, " experts on ", world, " ranks");
  check(weights.experts.size() == static_cast<size_t>(router.num_experts), "MoE weights for ",
        weights.experts.size(), " experts, the router has ", router.num_experts);
  for (const std::vector<int64_t>* counts : {expert_load, remote_load, computed_load})
    check(!counts || counts->size() == static_cast<size_t>(router.num_experts), "expert load of ",
          counts ? counts->size() : 0, " counts for ", router.num_experts, " experts");
  std::vector<int32_t> ids;
  std::vector<float> routing;
  if (n > 0) {
    Buffer logits(backend, DType::f32, {n, router.num_experts});
    Buffer top_weights(backend, DType::f32, {n, k}), top_ids(backend, DType::i32, {n, k});
    backend.matmul(x, weights.router, nullptr, logits.tensor());
    route_tokens(backend, logits.tensor(), router, top_weights.tensor(), top_ids.tensor(),
                 weights.score_correction_bias ? &*weights.score_correction_bias : nullptr);
    ids = download<int32_t>(backend, top_ids.tensor());
    routing = download<float>(backend, top_weights.tensor());
  }
  if (expert_load)
    for (int32_t e : ids) ++(*expert_load)[static_cast<size_t>(e)];

  // Dispatch: rows (and their expert ids) grouped by target rank.
  const std::vector<Assignment> sent = plan_assignments(ids, routing, k, placement, rank);
  const auto rows_out = static_cast<int64_t>(sent.size());
  std::vector<int64_t> send_counts(static_cast<size_t>(world), 0);
  std::vector<int32_t> send_tokens, send_experts;
  for (const Assignment& a : sent) {
    ++send_counts[static_cast<size_t>(a.target_rank)];
    if (remote_load && a.target_rank != rank) ++(*remote_load)[static_cast<size_t>(a.expert)];
    send_tokens.push_back(a.token);
    send_experts.push_back(a.expert);
  }
  const std::vector<int64_t> recv_counts = comm.exchange_counts(send_counts);
  const int64_t rows_in = std::accumulate(recv_counts.begin(), recv_counts.end(), int64_t{0});
  Buffer send_rows(backend, DType::f32, {rows_out, hidden}),
      recv_rows(backend, DType::f32, {rows_in, hidden});
  if (rows_out > 0) {
    const Buffer token_index = upload<int32_t>(backend, send_tokens, DType::i32);
    backend.gather_rows(x, token_index.tensor(), send_rows.tensor());
  }
  const Buffer send_ids = upload<int32_t>(backend, send_experts, DType::i32);
  Buffer recv_ids(backend, DType::i32, {rows_in});
  comm.all_to_all(send_rows.tensor(), send_counts, recv_rows.tensor(), recv_counts);
  comm.all_to_all(send_ids.tensor(), send_counts, recv_ids.tensor(), recv_counts);
  const std::vector<int32_t> recv_experts = download<int32_t>(backend, recv_ids.tensor());
  if (computed_load)
    for (const int32_t e : recv_experts) ++(*computed_load)[static_cast<size_t>(e)];

  // Compute, and send the results back where they came from.
  const Buffer results =
      compute_received(backend, recv_rows.tensor(), recv_experts, weights, placement, rank);
  Buffer returned(backend, DType::f32, {rows_out, hidden});
  comm.all_to_all(results.tensor(), recv_counts, returned.tensor(), send_counts);

  // Combine in (expert, token) order: the single-rank layer's order of additions.
  std::vector<int32_t> order(static_cast<size_t>(rows_out));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return std::tie(sent[static_cast<size_t>(a)].expert, sent[static_cast<size_t>(a)].token) <
           std::tie(sent[static_cast<size_t>(b)].expert, sent[static_cast<size_t>(b)].token);
  });
  std::vector<int32_t> tokens_in_order;
  std::vector<float> weights_in_order;
  for (int32_t i : order) {
    tokens_in_order.push_back(sent[static_cast<size_t>(i)].token);
    weights_in_order.push_back(sent[static_cast<size_t>(i)].weight);
  }
  if (n == 0) return;
  backend.fill(out, 0.0f);
  if (rows_out > 0) {
    Buffer ordered(backend, DType::f32, {rows_out, hidden});
    backend.gather_rows(returned.tensor(), upload<int32_t>(backend, order, DType::i32).tensor(),
                        ordered.tensor());
    backend.scatter_add_rows(ordered.tensor(),
                             upload<int32_t>(backend, tokens_in_order, DType::i32).tensor(),
                             upload<float>(backend, weights_in_order, DType::f32).tensor(), out);
  }
  if (weights.has_shared_expert) add_shared_expert(backend, x, weights, out);
}

}  // namespace hive
