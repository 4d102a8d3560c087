// The step messages survive CAF's serialization: a WorkerStep carries the
// scheduler's StepPlan as it is, block-table updates included.
#include <gtest/gtest.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "actors/messages.hpp"
#include "base/error.hpp"

namespace hive {
namespace {

TEST(Messages, AWorkerStepRoundTripsWithItsPlan) {
  caf::actor_system_config config;
  caf::actor_system system(config);
  WorkerStep sent;
  sent.step_id = 12;
  ScheduledSequence run;
  run.seq_id = 3;
  run.num_computed_tokens = 5;
  run.token_ids = {7, 8};
  run.num_kept_blocks = 1;
  run.new_block_ids = {9, 4};
  run.needs_logits = true;
  run.num_draft_tokens = 1;
  sent.plan.sequences = {run};
  SampleSlot slot;
  slot.seq_id = 3;
  slot.num_sampled = 2;
  slot.history = TokenHistory{{1, 2}, {3}};
  slot.draft_token_ids = {8};
  sent.plan.samples = {slot};
  sent.plan.swap_out = {{1, 2}};
  sent.plan.swap_in = {{3, 4}};
  sent.plan.copy_on_write = {{5, 6}};
  sent.plan.finished_seq_ids = {2};
  sent.replicas = {{1}, {}};
  std::vector<char> buffer;
  caf::binary_serializer sink(system, buffer);
  ASSERT_FALSE(sink(sent));
  WorkerStep got;
  caf::binary_deserializer source(system, buffer);
  ASSERT_FALSE(source(got));
  EXPECT_EQ(got.step_id, 12);
  ASSERT_EQ(got.plan.sequences.size(), 1u);
  const ScheduledSequence& r = got.plan.sequences[0];
  EXPECT_EQ(r.seq_id, 3);
  EXPECT_EQ(r.num_computed_tokens, 5);
  EXPECT_EQ(r.token_ids, run.token_ids);
  EXPECT_EQ(r.num_kept_blocks, 1);
  EXPECT_EQ(r.new_block_ids, run.new_block_ids);
  EXPECT_TRUE(r.needs_logits);
  EXPECT_EQ(r.num_draft_tokens, 1);
  ASSERT_EQ(got.plan.samples.size(), 1u);
  EXPECT_EQ(got.plan.samples[0].num_sampled, 2);
  ASSERT_TRUE(got.plan.samples[0].history.has_value());
  EXPECT_EQ(got.plan.samples[0].history->output_token_ids, (std::vector<int32_t>{3}));
  EXPECT_EQ(got.plan.samples[0].draft_token_ids, (std::vector<int32_t>{8}));
  EXPECT_EQ(got.plan.swap_out, sent.plan.swap_out);
  EXPECT_EQ(got.plan.swap_in, sent.plan.swap_in);
  EXPECT_EQ(got.plan.copy_on_write, sent.plan.copy_on_write);
  EXPECT_EQ(got.plan.finished_seq_ids, sent.plan.finished_seq_ids);
  EXPECT_EQ(got.replicas, sent.replicas);
}

// SamplingParams' optional seed travels as a flag and a value.
TEST(Messages, SamplingParamsRoundTripWithAndWithoutASeed) {
  caf::actor_system_config config;
  caf::actor_system system(config);
  for (const std::optional<uint64_t> seed : {std::optional<uint64_t>{}, std::optional<uint64_t>{0},
                                             std::optional<uint64_t>{UINT64_MAX}}) {
    SamplingParams sent{0.5f, 7, 0.9f, seed};
    std::vector<char> buffer;
    caf::binary_serializer sink(system, buffer);
    ASSERT_FALSE(sink(sent));
    SamplingParams received{1.0f, 0, 1.0f, 42};
    caf::binary_deserializer source(system, buffer);
    ASSERT_FALSE(source(received));
    EXPECT_EQ(received.seed, seed);
    EXPECT_EQ(received.temperature, 0.5f);
    EXPECT_EQ(received.top_k, 7);
    EXPECT_EQ(received.top_p, 0.9f);
  }
}

}  // namespace
}  // namespace hive
