// ExpertLoad: accumulation of per-step deltas, per-layer imbalance
// (max / mean) and the hottest experts over all layers.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "moe/expert_load.hpp"

namespace hive {
namespace {

TEST(ExpertLoad, AccumulatesDeltasAndMeasuresImbalance) {
  ExpertLoad load(2, 4);  // layer 1 is dense: never receives tokens
  load.add(std::vector<int64_t>{3, 1, 0, 0, 0, 0, 0, 0});
  load.add(std::vector<int64_t>{1, 1, 0, 2, 0, 0, 0, 0},
           std::vector<int64_t>{1, 0, 0, 2, 0, 0, 0, 0});
  EXPECT_EQ(load.load(), (std::vector<int64_t>{4, 2, 0, 2, 0, 0, 0, 0}));
  EXPECT_EQ(load.remote(), (std::vector<int64_t>{1, 0, 0, 2, 0, 0, 0, 0}));
  EXPECT_EQ(load.total(), 8);
  EXPECT_DOUBLE_EQ(load.imbalance(0), 4.0 / (8.0 / 4));
  EXPECT_EQ(load.imbalance(1), 0.0);
  EXPECT_EQ(load.hottest(2), (std::vector<int32_t>{0, 1}));  // 1 and 3 tie: lower id first
  EXPECT_EQ(load.hottest(9).size(), 4u);
  EXPECT_THROW(load.add(std::vector<int64_t>{1, 2}), Error);
  EXPECT_THROW(load.add(std::vector<int64_t>(8, 1), std::vector<int64_t>{1}), Error);
  EXPECT_EQ(load.total(), 8);  // a rejected delta adds nothing
}

TEST(ExpertLoad, EvenLoadHasImbalanceOne) {
  ExpertLoad load(1, 3);
  load.add(std::vector<int64_t>{5, 5, 5});
  EXPECT_DOUBLE_EQ(load.imbalance(0), 1.0);
}

}  // namespace
}  // namespace hive
