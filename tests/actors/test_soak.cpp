// A short soak (tools/soak/soak.hpp): 300 requests with cancels, dropped
// streams, n > 1, priorities, shared prefixes, a KV pool small enough to
// preempt and two injected worker faults. Every request ends exactly once
// per sample, nothing follows its end, and no KV block stays in use. The
// memory bound is the long run's (hive_soak), not this test's: 300
// requests are too few for a resident-memory trend.
#include <gtest/gtest.h>

#include "tools/soak/soak.hpp"

namespace hive {
namespace {

TEST(Soak, EveryRequestEndsOnceAndNoBlockLeaks) {
  Engine engine(soak::engine_options(std::string(HIVE_SOURCE_DIR) + "/models/hive-draft",
                                     int64_t{128} << 10));
  soak::Options options;
  options.num_requests = 300;
  options.fault_every = 120;
  options.checkpoint = 100;
  const soak::Report r = soak::run(engine, options);
  EXPECT_EQ(r.violations, 0) << r.first_violation;
  EXPECT_EQ(r.blocks_in_use, 0);
  EXPECT_EQ(r.requests, 300);
  EXPECT_EQ(r.finished + r.failed + r.dropped, 300);
  EXPECT_GT(r.cancelled, 0);
  EXPECT_GT(r.dropped, 0);
  EXPECT_EQ(r.faults, 2);
  EXPECT_GT(r.preemptions, 0) << "the KV pool is not small enough to preempt";
  EXPECT_EQ(engine.shutdown(), 0);
}

}  // namespace
}  // namespace hive
