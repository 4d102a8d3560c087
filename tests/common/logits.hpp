#pragma once
// Comparing logits of two runs that should agree: the largest |a - b| over
// every logit, divided by the largest |logit| of its row in `expected` (or by
// 1 when that is smaller), so that a bound holds whatever the logits' scale.
#include <algorithm>
#include <cmath>
#include <vector>

namespace hive::test {

using LogitsRows = std::vector<std::vector<float>>;

// Rows and lengths that differ count as an infinite difference.
inline double max_relative_logits_difference(const LogitsRows& expected, const LogitsRows& got) {
  if (expected.size() != got.size()) return INFINITY;
  double max_diff = 0;
  for (size_t t = 0; t < expected.size(); ++t) {
    if (expected[t].size() != got[t].size()) return INFINITY;
    double scale = 1;
    for (const float logit : expected[t]) scale = std::max(scale, std::abs(double{logit}));
    for (size_t v = 0; v < expected[t].size(); ++v)
      max_diff = std::max(max_diff, std::abs(double{expected[t][v]} - got[t][v]) / scale);
  }
  return max_diff;
}

}  // namespace hive::test
