// Plans made one step ahead of their results (async scheduling): every
// output is the one the step-by-step loop gives, under chunked prefill,
// both kinds of preemption, prefix caching, n > 1 and early stops, with no
// block leaked; the only extra work is one sample per sequence that stopped
// on a token the scheduler could not foresee.
#include <map>
#include <string>
#include <utility>

#include "tests/core/scheduler_fixture.hpp"

namespace hive {
namespace {

using test::Ids;

struct Outcome {
  Ids tokens;
  FinishReason reason = FinishReason::none;
  bool operator==(const Outcome&) const = default;
};
using Outcomes = std::map<std::pair<std::string, int>, Outcome>;

class AheadTest : public test::SchedulerFixture,
                  public ::testing::WithParamInterface<PreemptionMode> {
 protected:
  // Tokens from a hash of (request, sample, position): about one in seven is
  // end-of-sequence (2), so sequences stop where no plan can foresee it.
  static int32_t scripted(const Sequence& seq) {
    uint32_t h = 2166136261u;
    for (const char c : seq.request->id) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
    h = (h ^ static_cast<uint32_t>(seq.sample_index)) * 16777619u;
    h = (h ^ static_cast<uint32_t>(seq.num_output_tokens())) * 16777619u;
    return h % 7 == 0 ? 2 : static_cast<int32_t>(10 + h % 50);
  }

  // Runs the workload; returns the outcomes and counts the samples planned.
  Outcomes run(bool plan_ahead, int64_t& samples_planned) {
    SchedulerConfig config;
    config.max_num_batched_tokens = 8;  // prompts run in chunks
    config.preemption_mode = GetParam();
    make(config, blocks(/*device=*/12, /*host=*/8, /*prefix_caching=*/true));
    next_token = scripted;
    ahead = plan_ahead;
    const std::vector<std::pair<int64_t, int64_t>> shapes = {{13, 9}, {6, 12}, {3, 7},
                                                             {17, 5}, {9, 10}, {5, 8}};
    for (size_t i = 0; i < shapes.size(); ++i) {
      // Every other prompt starts with the same 8 tokens: prefix-cache hits.
      Request r = request("r" + std::to_string(i), shapes[i].first, shapes[i].second,
                          i % 2 == 0 ? 10 : 30 + static_cast<int32_t>(i));
      if (i == 1) r.n = 2;
      if (i == 3) r.stop.ignore_eos = true;
      scheduler->add_request(std::move(r));
    }
    Outcomes outcomes;
    samples_planned = 0;
    for (int i = 0; i < 1000 && scheduler->has_unfinished(); ++i) {
      for (const SequenceOutput& out : step())
        outcomes[{out.request_id, out.sample_index}] = {out.token_ids, out.finish_reason};
      samples_planned += static_cast<int64_t>(last_plan.samples.size());
    }
    EXPECT_FALSE(scheduler->has_unfinished());
    return outcomes;
  }
};

TEST_P(AheadTest, PlansAheadOfResultsGiveTheSameOutputs) {
  int64_t sync_samples = 0, ahead_samples = 0;
  const Outcomes sync = run(false, sync_samples);
  const SchedulerStats sync_stats = scheduler->stats();
  const Outcomes ahead_out = run(true, ahead_samples);
  ASSERT_EQ(sync.size(), 7u);  // six requests, one with two samples
  EXPECT_EQ(ahead_out, sync);
  int64_t early_stops = 0;
  for (const auto& [_, outcome] : sync) early_stops += outcome.reason == FinishReason::eos;
  EXPECT_GT(early_stops, 0);
  EXPECT_LE(ahead_samples, sync_samples + early_stops);
  // The workload preempts, so the pending tokens went through it.
  EXPECT_GT(sync_stats.num_preemptions_recompute + sync_stats.num_preemptions_swap, 0);
  EXPECT_GT(scheduler->stats().num_preemptions_recompute + scheduler->stats().num_preemptions_swap,
            0);
  EXPECT_GT(kv->stats().prefix_hit_tokens, 0);
}

// A block whose last token is still pending is cached only once the token
// is known (its key would hold the placeholder and never be hit).
class AheadCacheTest : public test::SchedulerFixture {};

TEST_F(AheadCacheTest, ABlockWithAPendingTokenIsCachedOnceTheTokenIsKnown) {
  make(SchedulerConfig{}, blocks(16, 0, /*prefix_caching=*/true));
  ahead = true;
  scheduler->add_request(request("a", 7, 4));  // tokens 10..16, then 107, 108, ...
  step();                                      // the prompt; the token at position 7 is pending
  step();  // computes it while pending; the prompt's results come back: 107
  step();  // the next allocation caches the block 14 15 16 107
  Request b = request("b", 7, 1);
  b.prompt_token_ids.push_back(107);
  b.prompt_token_ids.push_back(50);
  scheduler->add_request(std::move(b));
  step();
  EXPECT_EQ(kv->stats().prefix_hit_tokens, 8);
  run_to_completion();
}

// Plans voided by a fault (recompute_all) give back the tokens they counted
// as computed: only what an updated plan computed is computed again.
TEST_F(AheadCacheTest, VoidedPlansCountNothingAsComputed) {
  make(SchedulerConfig{}, blocks(16));
  ahead = true;
  scheduler->add_request(request("a", 8, 4));
  step();  // the prompt: 8 tokens, not updated
  scheduler->recompute_all();
  in_flight.clear();
  EXPECT_EQ(scheduler->sequence(0).num_computed_tokens, 0);
  EXPECT_EQ(scheduler->sequence(0).num_tokens(), 8);  // its pending token is gone
  step();                                             // the prompt again
  step();                      // its result comes back; the next token is planned
  scheduler->recompute_all();  // voids the step in flight, not the prompt
  in_flight.clear();
  const std::vector<SequenceOutput> out = run_to_completion();
  EXPECT_EQ(scheduler->stats().num_tokens_recomputed, 8);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].token_ids, (Ids{108, 109, 110, 111}));
}

// A plan that ran nothing and was never sent is dropped; it must not take
// the place of a later plan in the bookkeeping of what is computed.
TEST_F(AheadCacheTest, ADroppedEmptyPlanLeavesTheOthersInOrder) {
  make(SchedulerConfig{}, blocks(16));
  scheduler->add_request(request("a", 4, 1));
  const StepPlan prompt = schedule();
  ASSERT_EQ(prompt.samples.size(), 1u);
  StepPlan empty = schedule();
  EXPECT_TRUE(empty.runs_nothing());  // a's pending token is its last
  scheduler->drop_empty_plan(std::move(empty));
  std::vector<SampledToken> sampled = {{prompt.samples[0].seq_id, 50, {}, {}}};
  EXPECT_EQ(scheduler->update(sampled).size(), 1u);  // a ends
  StepPlan only_finished = schedule();
  EXPECT_TRUE(only_finished.runs_nothing());
  EXPECT_EQ(only_finished.finished_seq_ids, (std::vector<SequenceId>{0}));
  scheduler->drop_empty_plan(std::move(only_finished));  // a's end goes with the next plan
  scheduler->add_request(request("b", 4, 3));
  const StepPlan b_prompt = schedule();
  EXPECT_EQ(b_prompt.finished_seq_ids, (std::vector<SequenceId>{0}));
  sampled = {{b_prompt.samples.at(0).seq_id, 51, {}, {}}};
  EXPECT_TRUE(scheduler->update(sampled).empty());
  schedule();       // b's next token: counted, never run
  scheduler->recompute_all();  // gives back that one, not b's prompt
  EXPECT_EQ(scheduler->sequence(1).num_tokens_to_recompute, 4);
  EXPECT_THROW(scheduler->drop_empty_plan({}), Error);  // no plan left to drop
  run_to_completion();
}

// Neither a sequence admitted in a voided plan and preempted by the next
// one, nor children forked in a voided plan, count anything as computed.
TEST_F(AheadCacheTest, VoidedAdmissionsAndForksCountNoRecompute) {
  SchedulerConfig config;
  config.preemption_mode = PreemptionMode::recompute;
  make(config, blocks(3));  // the null block and 2 of 4 tokens
  scheduler->add_request(request("a", 4, 4));
  scheduler->add_request(request("b", 4, 4));
  ASSERT_EQ(schedule().sequences.size(), 2u);
  schedule();  // a needs a block: b is preempted
  EXPECT_EQ(scheduler->stats().num_preemptions_recompute, 1);
  scheduler->recompute_all();
  EXPECT_EQ(scheduler->sequence(0).num_tokens_to_recompute, 0);
  EXPECT_EQ(scheduler->sequence(1).num_tokens_to_recompute, 0);
  run_to_completion();

  make(SchedulerConfig{}, blocks(16));
  Request forked = request("c", 4, 3);
  forked.n = 2;
  scheduler->add_request(forked);
  schedule();  // the prompt, and the fork of sample 1
  scheduler->recompute_all();
  EXPECT_EQ(scheduler->sequence(0).num_tokens_to_recompute, 0);
  EXPECT_EQ(scheduler->sequence(1).num_tokens_to_recompute, 0);
  run_to_completion();
  EXPECT_EQ(scheduler->stats().num_tokens_recomputed, 0);
}

INSTANTIATE_TEST_SUITE_P(Preemption, AheadTest,
                         ::testing::Values(PreemptionMode::recompute, PreemptionMode::swap),
                         [](const auto& p) {
                           return p.param == PreemptionMode::swap ? "swap" : "recompute";
                         });

}  // namespace
}  // namespace hive
