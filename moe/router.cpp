#include "moe/router.hpp"

#include "kernels/error.hpp"

namespace hive {

void route_tokens(Backend& backend, const Tensor& router_logits, const RouterConfig& config,
                  const Tensor& weights, const Tensor& expert_ids) {
  check(router_logits.ndim == 2 && router_logits.shape[1] == config.num_experts,
        "route_tokens: logits ", router_logits.shape_text(), " for ", config.num_experts,
        " experts");
  backend.softmax(router_logits);
  backend.topk(router_logits, config.top_k, weights, expert_ids);
  if (config.normalize_top_k) backend.normalize_rows(weights);
}

}  // namespace hive
