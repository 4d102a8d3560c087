#include "moe/router.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

#include "base/error.hpp"
#include "kernels/buffer.hpp"

namespace hive {

namespace {

// Indices of the k largest values, largest first, ties to the lower index.
std::vector<int32_t> top_indices(const std::vector<float>& values, int k) {
  std::vector<int32_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return values[static_cast<size_t>(a)] > values[static_cast<size_t>(b)];
  });
  order.resize(static_cast<size_t>(k));
  return order;
}

// The correction bias as f32 on the host: transformers keeps it in f32, but
// a checkpoint saved whole in bf16 or f16 stores it so.
std::vector<float> host_bias(Backend& backend, const Tensor& bias) {
  if (bias.dtype == DType::f32) return download<float>(backend, bias);
  check(bias.dtype == DType::bf16 || bias.dtype == DType::f16, "route_tokens: correction bias of ",
        dtype_name(bias.dtype), " (expected f32, bf16 or f16)");
  std::vector<float> out;
  for (const uint16_t bits : download<uint16_t>(backend, bias))
    out.push_back(bias.dtype == DType::bf16 ? bf16_to_f32(bits) : f16_to_f32(bits));
  return out;
}

}  // namespace

void route_grouped(const float* scores, const float* bias, const RouterConfig& config, int32_t* ids,
                   float* weights) {
  const int experts = config.num_experts, per_group = experts / config.n_group;
  std::vector<float> choice(static_cast<size_t>(experts));
  for (int e = 0; e < experts; ++e)
    choice[static_cast<size_t>(e)] = scores[e] + (bias ? bias[e] : 0.0f);
  // A group's score: the sum of its two best biased scores (V3), or its
  // best probability (V2).
  const bool best_two = config.rule == RoutingRule::grouped_sigmoid;
  std::vector<float> group_scores(static_cast<size_t>(config.n_group));
  for (int g = 0; g < config.n_group; ++g) {
    const std::vector<float> members(choice.begin() + g * per_group,
                                     choice.begin() + (g + 1) * per_group);
    const std::vector<int32_t> best = top_indices(members, best_two ? 2 : 1);
    float group_score = 0.0f;
    for (const int32_t e : best) group_score += members[static_cast<size_t>(e)];
    group_scores[static_cast<size_t>(g)] = group_score;
  }
  std::vector<bool> kept(static_cast<size_t>(config.n_group), false);
  for (const int32_t g : top_indices(group_scores, config.topk_group))
    kept[static_cast<size_t>(g)] = true;
  for (int e = 0; e < experts; ++e)
    if (!kept[static_cast<size_t>(e / per_group)])
      choice[static_cast<size_t>(e)] = -std::numeric_limits<float>::infinity();
  const std::vector<int32_t> chosen = top_indices(choice, config.top_k);
  float sum = 0.0f;
  for (int i = 0; i < config.top_k; ++i) {
    ids[i] = chosen[static_cast<size_t>(i)];
    weights[i] = scores[ids[i]];
    sum += weights[i];
  }
  for (int i = 0; i < config.top_k; ++i) {
    if (config.normalize_top_k) weights[i] /= sum + 1e-20f;
    weights[i] *= config.routed_scaling_factor;
  }
}

void route_tokens(Backend& backend, const Tensor& router_logits, const RouterConfig& config,
                  const Tensor& weights, const Tensor& expert_ids, const Tensor* score_bias) {
  check(router_logits.ndim == 2 && router_logits.shape[1] == config.num_experts,
        "route_tokens: logits ", router_logits.shape_text(), " for ", config.num_experts,
        " experts");
  if (config.rule == RoutingRule::softmax) {
    backend.softmax(router_logits);
    backend.topk(router_logits, config.top_k, weights, expert_ids);
    if (config.normalize_top_k) backend.normalize_rows(weights);
    return;
  }
  const bool sigmoid = config.rule == RoutingRule::grouped_sigmoid;
  // A V3 group is scored by its two best experts, so it needs two.
  const int min_per_group = sigmoid ? 2 : 1;
  check(config.n_group >= 1 && config.num_experts % config.n_group == 0 &&
            config.num_experts / config.n_group >= min_per_group && config.topk_group >= 1 &&
            config.topk_group <= config.n_group &&
            config.top_k <= config.topk_group * (config.num_experts / config.n_group),
        "route_tokens: top ", config.top_k, " of ", config.num_experts, " experts in ",
        config.n_group, " groups, keeping ", config.topk_group);
  check(!score_bias || (sigmoid && score_bias->numel() == config.num_experts),
        "route_tokens: correction bias ",
        score_bias ? score_bias->shape_text() : Tensor{}.shape_text(), " for ", config.num_experts,
        " experts", sigmoid ? "" : " (grouped softmax takes none)");
  // A few numbers per token: chosen on the host, like the dispatch plan.
  if (sigmoid) {
    backend.sigmoid(router_logits);
  } else {
    backend.softmax(router_logits);
  }
  const int64_t n = router_logits.shape[0];
  const int k = config.top_k;
  const std::vector<float> scores = download<float>(backend, router_logits);
  const std::vector<float> bias =
      score_bias ? host_bias(backend, *score_bias) : std::vector<float>{};
  std::vector<int32_t> ids(static_cast<size_t>(n * k));
  std::vector<float> chosen_weights(static_cast<size_t>(n * k));
  for (int64_t t = 0; t < n; ++t)
    route_grouped(scores.data() + t * config.num_experts, score_bias ? bias.data() : nullptr,
                  config, ids.data() + t * k, chosen_weights.data() + t * k);
  backend.copy(weights, upload<float>(backend, chosen_weights, DType::f32).tensor());
  backend.copy(expert_ids, upload<int32_t>(backend, ids, DType::i32).tensor());
}

}  // namespace hive
