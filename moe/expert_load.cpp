#include "moe/expert_load.hpp"

#include <algorithm>
#include <numeric>

#include "base/error.hpp"

namespace hive {

namespace {

// Checked before any allocation: a negative count must not reach a vector.
size_t num_counts(int num_layers, int num_experts) {
  check(num_layers >= 0 && num_experts >= 0, "expert load for ", num_layers, " layers and ",
        num_experts, " experts");
  return static_cast<size_t>(num_layers) * static_cast<size_t>(num_experts);
}

}  // namespace

ExpertLoad::ExpertLoad(int num_layers, int num_experts)
    : num_layers_(num_layers),
      num_experts_(num_experts),
      load_(num_counts(num_layers, num_experts), 0),
      remote_(load_.size(), 0) {}

void ExpertLoad::add(std::span<const int64_t> delta, std::span<const int64_t> remote) {
  if (delta.empty()) return;
  check(delta.size() == load_.size() && (remote.empty() || remote.size() == load_.size()),
        "expert load delta of ", delta.size(), " and ", remote.size(), " counts, expected ",
        load_.size());
  for (size_t i = 0; i < delta.size(); ++i) {
    load_[i] += delta[i];
    total_ += delta[i];
    if (!remote.empty()) remote_[i] += remote[i];
  }
}

double ExpertLoad::imbalance(int layer) const {
  check(layer >= 0 && layer < num_layers_, "layer ", layer, " outside ", num_layers_);
  const auto begin = load_.begin() + static_cast<std::ptrdiff_t>(layer) * num_experts_;
  const auto end = begin + num_experts_;
  const int64_t sum = std::accumulate(begin, end, int64_t{0});
  if (sum == 0) return 0.0;
  const double mean = static_cast<double>(sum) / num_experts_;
  return static_cast<double>(*std::max_element(begin, end)) / mean;
}

std::vector<int32_t> ExpertLoad::hottest(int n) const {
  std::vector<int64_t> per_expert(static_cast<size_t>(num_experts_), 0);
  for (size_t i = 0; i < load_.size(); ++i)
    per_expert[i % static_cast<size_t>(num_experts_)] += load_[i];
  std::vector<int32_t> order(static_cast<size_t>(num_experts_));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return per_expert[static_cast<size_t>(a)] > per_expert[static_cast<size_t>(b)];
  });
  order.resize(static_cast<size_t>(std::clamp(n, 0, num_experts_)));
  return order;
}

}  // namespace hive
