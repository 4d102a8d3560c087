#include "runtime/model/logprobs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "base/error.hpp"

namespace hive {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// log(sum(exp(l))) over the logits, and how many of them are +inf.
double log_sum_exp(std::span<const float> logits, int64_t& num_infinite) {
  double max = -kInf;
  num_infinite = 0;
  for (const float l : logits) {
    if (std::isnan(l)) continue;
    if (l == std::numeric_limits<float>::infinity()) ++num_infinite;
    max = std::max<double>(max, l);
  }
  if (num_infinite > 0 || max == -kInf) return max;
  double total = 0.0;
  for (const float l : logits)
    if (!std::isnan(l)) total += std::exp(static_cast<double>(l) - max);
  return max + std::log(total);
}

}  // namespace

TokenLogprobs compute_logprobs(std::span<const float> logits, int32_t token, int num_top) {
  check(token >= 0 && static_cast<size_t>(token) < logits.size(), "logprobs: token id ", token,
        " is out of range [0, ", logits.size(), ")");
  int64_t num_infinite = 0;
  const double lse = log_sum_exp(logits, num_infinite);
  const auto logprob = [&](int32_t id) -> float {
    const float l = logits[static_cast<size_t>(id)];
    if (num_infinite == 0) return static_cast<float>(static_cast<double>(l) - lse);
    if (std::isnan(l)) return l;
    return std::isinf(l) && l > 0 ? static_cast<float>(-std::log(static_cast<double>(num_infinite)))
                                  : -std::numeric_limits<float>::infinity();
  };
  TokenLogprobs out;
  out.logprob = logprob(token);
  const size_t n = std::min(logits.size(), static_cast<size_t>(std::max(num_top, 0)));
  if (n == 0) return out;
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  const auto before = [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    if (std::isnan(la) != std::isnan(lb)) return std::isnan(lb);
    return la > lb || (!(lb > la) && a < b);
  };
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(), before);
  for (size_t i = 0; i < n; ++i) {
    out.top_token_ids.push_back(ids[i]);
    out.top_logprobs.push_back(logprob(ids[i]));
  }
  return out;
}

}  // namespace hive
