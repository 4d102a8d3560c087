// Scheduler: the token budget, chunked prefill, max_num_seqs, FCFS and
// priority order, and both kinds of preemption, step by step with exact runs
// and block ids. Sequence ids count from 0 in add_request order; block size 4.
#include <algorithm>
#include <limits>
#include <map>

#include "tests/core/scheduler_fixture.hpp"

namespace hive {
namespace {

using test::Ids;
using test::Runs;

class SchedulerTest : public test::SchedulerFixture {
 protected:
  // Request ids in the order they finish (with max_num_seqs 1: admission order).
  std::vector<std::string> finish_order() {
    std::vector<std::string> order;
    while (scheduler->has_unfinished())
      for (const SequenceOutput& out : step()) order.push_back(out.request_id);
    return order;
  }
};

SchedulerConfig budget(int64_t tokens, int64_t max_num_seqs = 64, bool chunked = true) {
  SchedulerConfig c;
  c.max_num_batched_tokens = tokens;
  c.max_num_seqs = max_num_seqs;
  c.enable_chunked_prefill = chunked;
  return c;
}

TEST_F(SchedulerTest, ChunksLongPromptsUnderOneTokenBudget) {
  make(budget(8), blocks(32));
  scheduler->add_request(request("a", 20, 2));
  scheduler->add_request(request("b", 3, 2));
  step();
  EXPECT_EQ(runs(), (Runs{{0, 0, 8}}));
  EXPECT_TRUE(last_plan.samples.empty());
  step();
  EXPECT_EQ(runs(), (Runs{{0, 8, 8}}));
  step();  // a's last chunk, then b's whole prompt in what is left
  EXPECT_EQ(runs(), (Runs{{0, 16, 4}, {1, 0, 3}}));
  EXPECT_EQ(last_plan.num_batched_tokens(), 7);
  ASSERT_EQ(last_plan.samples.size(), 2u);
  EXPECT_EQ(last_plan.samples[1].scheduled_index, 1u);
  const auto finished = step();  // one decode token each; max_tokens 2 reached
  EXPECT_EQ(runs(), (Runs{{0, 20, 1}, {1, 3, 1}}));
  ASSERT_EQ(finished.size(), 2u);
  EXPECT_EQ(finished[0].token_ids, (Ids{120, 121}));
  EXPECT_EQ(finished[0].finish_reason, FinishReason::length);
  EXPECT_EQ(scheduler->stats().num_steps, 4);
}

TEST_F(SchedulerTest, WithoutChunkingPromptsRunWholeOrWait) {
  make(budget(8, 64, false), blocks(32));
  try {
    scheduler->add_request(request("long", 7, 2));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("prompt + max_tokens = 9 tokens exceed "
                                         "max_num_batched_tokens = 8 and chunked prefill is off"),
              std::string::npos)
        << e.what();
  }
  scheduler->add_request(request("a", 5, 3));
  scheduler->add_request(request("b", 4, 2));
  step();
  EXPECT_EQ(runs(), (Runs{{0, 0, 5}}));  // b's 4 tokens do not fit the 3 left
  step();
  EXPECT_EQ(runs(), (Runs{{0, 5, 1}, {1, 0, 4}}));
  run_to_completion();
}

TEST_F(SchedulerTest, MaxNumSeqsBoundsTheRunningSet) {
  make(budget(64, 2), blocks(32));
  for (const char* id : {"a", "b", "c"}) scheduler->add_request(request(id, 2, 2));
  step();
  EXPECT_EQ(runs(), (Runs{{0, 0, 2}, {1, 0, 2}}));
  EXPECT_EQ(scheduler->num_waiting(), 1u);
  EXPECT_EQ(step().size(), 2u);  // a and b finish
  EXPECT_EQ(runs(), (Runs{{0, 2, 1}, {1, 2, 1}}));
  step();
  EXPECT_EQ(runs(), (Runs{{2, 0, 2}}));
  run_to_completion();
  EXPECT_EQ(scheduler->stats().max_num_running, 2);
}

TEST_F(SchedulerTest, FcfsAdmitsInArrivalOrder) {
  make(budget(64, 1), blocks(32));
  for (auto [id, priority] : {std::pair{"a", 5}, {"b", 1}, {"c", 3}}) {
    Request r = request(id, 3, 1);
    r.priority = priority;
    scheduler->add_request(r);
  }
  EXPECT_EQ(finish_order(), (std::vector<std::string>{"a", "b", "c"}));
}

TEST_F(SchedulerTest, PriorityAdmitsLowerValuesFirst) {
  SchedulerConfig config = budget(64, 1);
  config.policy = SchedulingPolicy::priority;
  make(config, blocks(32));
  for (auto [id, priority] : {std::pair{"a", 5}, {"b", 1}, {"c", 3}, {"d", 1}}) {
    Request r = request(id, 3, 1);
    r.priority = priority;
    scheduler->add_request(r);
  }
  EXPECT_EQ(finish_order(), (std::vector<std::string>{"b", "d", "c", "a"}));
}

// Two sequences fill a 4-block pool; at step 3 sequence 0 needs a third block.
SchedulerConfig preempting(PreemptionMode mode) {
  SchedulerConfig c = budget(64);
  c.preemption_mode = mode;
  return c;
}

TEST_F(SchedulerTest, RecomputePreemptionFreesTheLastAndRequeuesItFirst) {
  make(preempting(PreemptionMode::recompute), blocks(5));
  scheduler->add_request(request("a", 7, 8));
  scheduler->add_request(request("b", 6, 8));
  scheduler->add_request(request("c", 1, 1));
  step();  // a [1, 2], b [3, 4]; c waits for blocks
  EXPECT_EQ(runs(), (Runs{{0, 0, 7}, {1, 0, 6}}));
  step();
  EXPECT_EQ(runs(), (Runs{{0, 7, 1}, {1, 6, 1}}));
  step();  // a needs a third block: b is preempted and a takes block 4
  EXPECT_EQ(runs(), (Runs{{0, 8, 1}}));
  EXPECT_EQ(table(0), (Ids{1, 2, 4}));
  EXPECT_EQ(scheduler->stats().num_preemptions_recompute, 1);
  EXPECT_EQ(scheduler->sequence(1).status, SequenceStatus::waiting);
  EXPECT_EQ(scheduler->sequence(1).num_computed_tokens, 0);
  EXPECT_EQ(scheduler->sequence(1).num_tokens(), 8);  // its sampled tokens are kept
  EXPECT_EQ(scheduler->num_waiting(), 2u);
  EXPECT_FALSE(kv->has_blocks(1));
  step();  // b is first in line again (before c) but does not fit yet
  EXPECT_EQ(runs(), (Runs{{0, 9, 1}}));
  std::vector<SequenceOutput> finished;
  while (finished.empty()) finished = step();
  EXPECT_EQ(finished[0].request_id, "a");
  const auto c_done = step();  // b recomputes its 7 computed tokens and runs the 8th
  EXPECT_EQ(runs(), (Runs{{1, 0, 8}, {2, 0, 1}}));
  EXPECT_EQ(scheduler->stats().num_tokens_recomputed, 7);
  ASSERT_EQ(c_done.size(), 1u);
  EXPECT_EQ(c_done[0].request_id, "c");
  const auto rest = run_to_completion();
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest.back().request_id, "b");
  EXPECT_EQ(rest.back().token_ids, (Ids{106, 107, 108, 109, 110, 111, 112, 113}));
}

// Sampling parameters travel once per admission: with a sequence's first
// sample, not with the ones after; a preempted sequence readmitted sends
// them again (the worker that samples it may be a new one).
TEST_F(SchedulerTest, SamplingParametersGoWithTheFirstSampleOfEachAdmission) {
  make(preempting(PreemptionMode::recompute), blocks(5));
  scheduler->add_request(request("a", 7, 8));
  scheduler->add_request(request("b", 6, 8));
  const auto carried = [&] {
    std::vector<std::pair<SequenceId, bool>> out;
    for (const SampleSlot& slot : last_plan.samples)
      out.emplace_back(slot.seq_id, slot.sampling.has_value());
    return out;
  };
  using Carried = std::vector<std::pair<SequenceId, bool>>;
  step();
  EXPECT_EQ(carried(), (Carried{{0, true}, {1, true}}));
  step();
  EXPECT_EQ(carried(), (Carried{{0, false}, {1, false}}));
  step();  // b is preempted
  EXPECT_EQ(carried(), (Carried{{0, false}}));
  bool readmitted = false;
  for (int steps = 0; !readmitted && steps < 64; ++steps) {
    step();
    for (const auto& [id, sent] : carried())
      if (id == 1) {
        EXPECT_TRUE(sent) << "b's first sample after readmission";
        readmitted = true;
      }
  }
  ASSERT_TRUE(readmitted) << "b was never readmitted";
  step();
  for (const auto& [id, sent] : carried()) EXPECT_FALSE(sent) << id;
  run_to_completion();
}

TEST_F(SchedulerTest, SwapPreemptionMovesBlocksToTheHostAndBack) {
  make(preempting(PreemptionMode::swap), blocks(5, 5));
  scheduler->add_request(request("a", 7, 8));
  scheduler->add_request(request("b", 6, 8));
  step();
  step();
  step();
  EXPECT_EQ(runs(), (Runs{{0, 8, 1}}));
  EXPECT_EQ(last_plan.swap_out, (std::vector<BlockCopy>{{3, 1}, {4, 2}}));
  EXPECT_EQ(table(0), (Ids{1, 2, 4}));
  EXPECT_EQ(scheduler->stats().num_preemptions_swap, 1);
  EXPECT_EQ(scheduler->sequence(1).status, SequenceStatus::swapped);
  EXPECT_EQ(scheduler->sequence(1).num_computed_tokens, 7);
  std::vector<SequenceOutput> finished;
  while (finished.empty()) finished = step();
  EXPECT_TRUE(last_plan.swap_in.empty());
  step();  // a's blocks freed tail first: 3, 4, 2, 1; b comes back and decodes
  EXPECT_EQ(last_plan.swap_in, (std::vector<BlockCopy>{{1, 3}, {2, 4}}));
  EXPECT_EQ(runs(), (Runs{{1, 7, 1}}));
  EXPECT_EQ(table(0), (Ids{3, 4}));
  const auto rest = run_to_completion();
  EXPECT_EQ(rest.back().token_ids, (Ids{106, 107, 108, 109, 110, 111, 112, 113}));
  EXPECT_EQ(scheduler->stats().num_preemptions_recompute, 0);
}

// A newcomer must not take the blocks a swapped-out sequence waits for:
// nothing is admitted while anything is swapped out, even when the newcomer
// would fit (here: one free block, c needs one; b needs two to come back).
TEST_F(SchedulerTest, NothingIsAdmittedWhileASequenceIsSwappedOut) {
  make(preempting(PreemptionMode::swap), blocks(5, 5));
  scheduler->add_request(request("a", 7, 8));
  scheduler->add_request(request("b", 6, 8));
  for (int i = 0; i < 3; ++i) step();
  ASSERT_EQ(scheduler->sequence(1).status, SequenceStatus::swapped);
  ASSERT_EQ(kv->device_pool().num_free_blocks(), 1);
  scheduler->add_request(request("c", 1, 1));
  bool b_back = false;
  while (scheduler->has_unfinished()) {
    step();
    b_back = b_back || !last_plan.swap_in.empty();
    const bool c_ran = std::any_of(last_plan.sequences.begin(), last_plan.sequences.end(),
                                   [](const ScheduledSequence& s) { return s.seq_id == 2; });
    EXPECT_TRUE(!c_ran || b_back) << "c ran while b was swapped out";
  }
  EXPECT_TRUE(b_back);
}

SchedulerConfig swapping_by_priority() {
  SchedulerConfig config = preempting(PreemptionMode::swap);
  config.policy = SchedulingPolicy::priority;
  return config;
}

// Under the priority policy the order holds across the queues: a newcomer
// ahead of the swapped sequence (here: b, priority 5) is admitted at once.
TEST_F(SchedulerTest, ANewcomerAheadOfASwappedSequenceIsAdmitted) {
  make(swapping_by_priority(), blocks(5, 5));
  scheduler->add_request(request("a", 7, 8));
  Request b = request("b", 6, 8);
  b.priority = 5;
  scheduler->add_request(b);
  for (int i = 0; i < 3; ++i) step();
  ASSERT_EQ(scheduler->sequence(1).status, SequenceStatus::swapped);
  ASSERT_EQ(kv->device_pool().num_free_blocks(), 1);
  scheduler->add_request(request("c", 1, 1));  // priority 0, one block
  step();
  EXPECT_EQ(runs(), (Runs{{0, 9, 1}, {2, 0, 1}}));
  EXPECT_EQ(scheduler->sequence(1).status, SequenceStatus::swapped);
  run_to_completion();
}

// A sequence comes back from the host only with room for its next tokens,
// and runs in the step that brings it back: it never goes out again without
// having computed anything.
TEST_F(SchedulerTest, ASwappedInSequenceRunsInTheStepThatBringsItBack) {
  make(swapping_by_priority(), blocks(13, 13));
  scheduler->add_request(request("a", 20, 28));
  Request l = request("l", 24, 8);
  l.priority = 5;
  scheduler->add_request(l);
  // Finished sequences are gone from the scheduler.
  const auto swapped = [&](SequenceId id) {
    try {
      return scheduler->sequence(id).status == SequenceStatus::swapped;
    } catch (const Error&) {
      return false;
    }
  };
  int swap_ins = 0;
  for (int i = 0; i < 200 && scheduler->has_unfinished(); ++i) {
    if (i == 3) scheduler->add_request(request("h", 3, 2));
    std::vector<SequenceId> were_swapped;
    for (const SequenceId id : {0, 1})
      if (swapped(id)) were_swapped.push_back(id);
    step();
    for (const SequenceId id : were_swapped) {
      if (swapped(id)) continue;
      ++swap_ins;
      EXPECT_TRUE(std::any_of(last_plan.sequences.begin(), last_plan.sequences.end(),
                              [&](const ScheduledSequence& s) { return s.seq_id == id; }))
          << "sequence " << id << " came back in step " << i << " without running";
    }
  }
  EXPECT_FALSE(scheduler->has_unfinished());
  EXPECT_GE(swap_ins, 1);
  EXPECT_LE(scheduler->stats().num_preemptions_swap, 2);
}

TEST_F(SchedulerTest, ByCostSwapsWhileTheHostHasRoomThenRecomputes) {
  SchedulerConfig config = preempting(PreemptionMode::by_cost);
  config.recompute_seconds_per_token = 1e-3;
  config.swap_seconds_per_block = 1e-4;
  make(config, blocks(6, 3));  // 5 device blocks, 2 host blocks
  scheduler->add_request(request("a", 7, 6));
  scheduler->add_request(request("b", 7, 6));
  scheduler->add_request(request("c", 3, 6));
  step();  // a [1, 2], b [3, 4], c [5]
  step();
  step();  // a: c swaps (1 block, cheaper); b: itself, too big for the host: recompute
  EXPECT_EQ(scheduler->stats().num_preemptions_swap, 1);
  EXPECT_EQ(scheduler->stats().num_preemptions_recompute, 1);
  EXPECT_EQ(last_plan.swap_out, (std::vector<BlockCopy>{{5, 1}}));
  EXPECT_EQ(runs(), (Runs{{0, 8, 1}}));
  EXPECT_EQ(scheduler->sequence(2).status, SequenceStatus::swapped);
  EXPECT_EQ(scheduler->sequence(1).status, SequenceStatus::waiting);
  const auto outputs = run_to_completion();
  EXPECT_EQ(outputs.size(), 3u);
  for (const SequenceOutput& out : outputs) EXPECT_EQ(out.token_ids.size(), 6u) << out.request_id;
}

// The workers holding the KV were replaced: every running and swapped
// sequence is computed again from its tokens, and each output continues as
// if nothing had happened (next_token depends only on the position).
TEST_F(SchedulerTest, RecomputeAllContinuesEveryOutputAfterTheCacheIsLost) {
  SchedulerConfig config = preempting(PreemptionMode::by_cost);
  config.recompute_seconds_per_token = 1e-3;
  config.swap_seconds_per_block = 1e-4;
  make(config, blocks(6, 3));
  scheduler->add_request(request("a", 7, 6));
  scheduler->add_request(request("b", 7, 6));
  scheduler->add_request(request("c", 3, 6));
  for (int i = 0; i < 3; ++i) step();  // a running, b waiting, c swapped (as above)
  ASSERT_EQ(scheduler->sequence(2).status, SequenceStatus::swapped);
  const int64_t a_tokens = scheduler->sequence(0).num_tokens();
  scheduler->recompute_all();
  EXPECT_EQ(scheduler->num_running(), 0u);
  EXPECT_EQ(scheduler->num_swapped(), 0u);
  EXPECT_EQ(scheduler->num_waiting(), 3u);
  EXPECT_EQ(kv->device_pool().num_free_blocks(), kv->device_pool().num_allocatable_blocks());
  EXPECT_EQ(kv->host_pool()->num_free_blocks(), kv->host_pool()->num_allocatable_blocks());
  step();  // a first: all of its tokens again, from position 0
  ASSERT_FALSE(last_plan.sequences.empty());
  EXPECT_EQ(last_plan.sequences[0].seq_id, 0u);
  EXPECT_EQ(last_plan.sequences[0].num_computed_tokens, 0);
  EXPECT_EQ(static_cast<int64_t>(last_plan.sequences[0].token_ids.size()), a_tokens);
  std::map<std::string, Ids> out;
  for (const SequenceOutput& o : run_to_completion()) out[o.request_id] = o.token_ids;
  EXPECT_EQ(out["a"], (Ids{107, 108, 109, 110, 111, 112}));
  EXPECT_EQ(out["b"], (Ids{107, 108, 109, 110, 111, 112}));
  EXPECT_EQ(out["c"], (Ids{103, 104, 105, 106, 107, 108}));
}

TEST_F(SchedulerTest, RejectsRequestsThatCouldNeverRun) {
  make(budget(64, 4), blocks(5));
  const auto expect_error = [&](Request r, const std::string& message) {
    try {
      scheduler->add_request(std::move(r));
      ADD_FAILURE() << "expected: " << message;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  expect_error(request("empty", 0, 1), "request empty: the prompt is empty");
  expect_error(request("zero", 3, 0), "max_tokens must be >= 1 (got 0)");
  expect_error(request("huge", 10, 7),
               "request huge: prompt (10 tokens) + max_tokens (7) exceed the KV pool's 16 "
               "tokens (4 blocks of 4)");
  // "No limit" written as the largest max_tokens must not overflow the check.
  expect_error(request("unbounded", 10, std::numeric_limits<int64_t>::max()),
               "max_tokens (9223372036854775807) exceed the KV pool's 16 tokens");
  Request many = request("many", 3, 1);
  many.n = 5;
  expect_error(many, "n must be in [1, max_num_seqs = 4] (got 5)");
  scheduler->add_request(request("a", 3, 1));
  expect_error(request("a", 3, 1), "request id 'a' is already in use");
  run_to_completion();
}

}  // namespace
}  // namespace hive
