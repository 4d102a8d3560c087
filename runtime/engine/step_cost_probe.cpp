#include "runtime/engine/step_cost_probe.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <vector>

#include "runtime/model/forward_batch.hpp"
#include "runtime/model/paged_kv_cache.hpp"

namespace hive {

StepCost measure_step_cost(Model& model, DType kv_cache_dtype, int64_t max_tokens) {
  constexpr int32_t kBlockSize = 16;
  constexpr int kTries = 3;
  const auto blocks = static_cast<int32_t>((max_tokens + kBlockSize - 1) / kBlockSize);
  PagedKVCache cache(model.backend(), model.config(), blocks + 1, kBlockSize, 0, kv_cache_dtype);
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  std::iota(table.begin(), table.end(), 1);  // block 0 is the null block
  const int64_t vocab = model.config().vocab_size;
  std::vector<float> logits(static_cast<size_t>(vocab));
  StepCost cost;
  for (int64_t n = 1; n <= max_tokens; n *= 2) {
    // Token ids spread over the vocabulary, so MoE layers route as usual.
    std::vector<int32_t> tokens(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) tokens[static_cast<size_t>(i)] = static_cast<int32_t>((7919 * (i + 1)) % vocab);
    ForwardBatch batch;
    batch.logits_rows.push_back(batch.add_run(0, tokens, table, kBlockSize));
    double best = 0.0;
    for (int t = 0; t < kTries; ++t) {
      const auto start = std::chrono::steady_clock::now();
      model.forward(batch, cache, Tensor::view(logits.data(), DType::f32, {1, vocab}));
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      best = t == 0 ? seconds : std::min(best, seconds);
    }
    cost.points.emplace_back(n, best);
  }
  return cost;
}

SpecCostModel measure_spec_cost(Model& target, Model* draft, DType kv_cache_dtype) {
  SpecCostModel cost;
  cost.target = measure_step_cost(target, kv_cache_dtype);
  if (draft) cost.draft = measure_step_cost(*draft, kv_cache_dtype);
  return cost;
}

}  // namespace hive
