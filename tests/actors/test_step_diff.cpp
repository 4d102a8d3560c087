// Step plans as diffs: the encoder sends only new token and block ids, the
// decoder rebuilds the exact plan.
#include <gtest/gtest.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "actors/messages.hpp"
#include "actors/step_diff.hpp"
#include "kernels/error.hpp"

namespace hive {
namespace {

ScheduledSequence scheduled(SequenceId id, int64_t computed, std::vector<int32_t> tokens,
                            std::vector<int32_t> table) {
  return {id, computed, std::move(tokens), std::move(table), true};
}

TEST(StepDiff, SendsOnlyNewBlocksAndRebuildsTheTables) {
  PlanEncoder encoder;
  PlanDecoder decoder;
  StepPlan first;
  first.sequences = {scheduled(1, 0, {5, 6, 7, 8, 9}, {3, 8}), scheduled(2, 0, {4}, {5})};
  const WorkerStep s1 = encoder.encode(first, 1);
  EXPECT_EQ(s1.sequences[0].new_blocks, (std::vector<int32_t>{3, 8}));
  EXPECT_FALSE(s1.sequences[0].replace_table);
  EXPECT_EQ(decoder.decode(s1).sequences[0].block_table, (std::vector<int32_t>{3, 8}));

  StepPlan second;  // seq 1 decodes into the same blocks, seq 2 grows a block
  second.sequences = {scheduled(1, 5, {10}, {3, 8}), scheduled(2, 1, {6}, {5, 9})};
  const WorkerStep s2 = encoder.encode(second, 2);
  EXPECT_TRUE(s2.sequences[0].new_blocks.empty());
  EXPECT_EQ(s2.sequences[0].token_ids, (std::vector<int32_t>{10}));
  EXPECT_EQ(s2.sequences[1].new_blocks, (std::vector<int32_t>{9}));
  const StepPlan rebuilt = decoder.decode(s2);
  EXPECT_EQ(rebuilt.sequences[0].block_table, (std::vector<int32_t>{3, 8}));
  EXPECT_EQ(rebuilt.sequences[1].block_table, (std::vector<int32_t>{5, 9}));
  EXPECT_EQ(rebuilt.sequences[1].num_computed_tokens, 1);
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

TEST(StepDiff, ReplacesATableThatChangedInPlace) {
  PlanEncoder encoder;
  PlanDecoder decoder;
  StepPlan first;
  first.sequences = {scheduled(7, 0, {1, 2, 3}, {4, 6})};
  decoder.decode(encoder.encode(first, 1));
  StepPlan second;  // copy-on-write moved the last block
  second.sequences = {scheduled(7, 3, {9}, {4, 11})};
  second.copy_on_write = {{6, 11}};
  const WorkerStep step = encoder.encode(second, 2);
  EXPECT_TRUE(step.sequences[0].replace_table);
  EXPECT_EQ(step.sequences[0].new_blocks, (std::vector<int32_t>{4, 11}));
  const StepPlan rebuilt = decoder.decode(step);
  EXPECT_EQ(rebuilt.sequences[0].block_table, (std::vector<int32_t>{4, 11}));
  EXPECT_EQ(rebuilt.copy_on_write, (std::vector<BlockCopy>{{6, 11}}));
}

TEST(StepDiff, FinishedSequencesAreDroppedOnBothSides) {
  PlanEncoder encoder;
  PlanDecoder decoder;
  StepPlan first;
  first.sequences = {scheduled(1, 0, {1}, {2})};
  decoder.decode(encoder.encode(first, 1));
  EXPECT_EQ(decoder.num_tables(), 1u);
  StepPlan second;
  second.finished_seq_ids = {1};
  decoder.decode(encoder.encode(second, 2));
  EXPECT_EQ(decoder.num_tables(), 0u);
  StepPlan third;  // the id comes back (a new sequence): its whole table is sent
  third.sequences = {scheduled(1, 0, {1}, {2})};
  const WorkerStep step = encoder.encode(third, 3);
  EXPECT_EQ(step.sequences[0].new_blocks, (std::vector<int32_t>{2}));
}

TEST(StepDiff, ADiffWithoutItsBaseIsAnError) {
  PlanDecoder decoder;
  WorkerStep step;
  step.step_id = 4;
  step.sequences = {StepSequence{3, 5, {1}, {}, false, true}};
  EXPECT_THROW(decoder.decode(step), Error);
}

}  // namespace
}  // namespace hive
