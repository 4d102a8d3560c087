// Speculative decoding in the scheduler, against a fake target whose next
// token is a fixed function of (request, position): a run with drafts must
// give exactly the outputs of the run without them, whatever the drafter
// proposes, under chunked prefill, prefix caching, both kinds of
// preemption and n > 1; rejected drafts give their blocks back at once (a
// sequence holds the blocks of its computed tokens and no more) and no
// block leaks. Also the n-gram lookup itself.
#include <map>
#include <string>
#include <utility>

#include "runtime/core/ngram_drafter.hpp"
#include "tests/core/scheduler_fixture.hpp"

namespace hive {
namespace {

using test::Ids;

// The target's token at `position` of a sample of `request`: about one in
// nine is end-of-sequence (2).
int32_t target_token(const Sequence& seq, int64_t position) {
  uint32_t h = 2166136261u;
  for (const char c : seq.request->id) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  h = (h ^ static_cast<uint32_t>(seq.sample_index)) * 16777619u;
  h = (h ^ static_cast<uint32_t>(position)) * 16777619u;
  return h % 9 == 0 ? 2 : static_cast<int32_t>(10 + h % 50);
}

// Proposes the target's own continuation, wrong from a point that depends
// on the sequence's length (sometimes at once, sometimes never).
class ScriptedDrafter final : public Drafter {
 public:
  std::vector<Draft> propose(std::span<const DraftQuery> queries) override {
    std::vector<Draft> drafts;
    for (const DraftQuery& q : queries) {
      Draft d;
      const int64_t n = q.seq->num_tokens();
      const int64_t right = n % (q.max_tokens + 2);
      for (int64_t i = 0; i < q.max_tokens; ++i)
        d.token_ids.push_back(i < right ? target_token(*q.seq, n + i) : 7);
      drafts.push_back(std::move(d));
    }
    return drafts;
  }
};

using SpeculativeDrafts = test::SchedulerFixture;

using Outcomes = std::map<std::pair<std::string, int>, std::pair<Ids, FinishReason>>;

class SpeculativeScheduler : public test::SchedulerFixture,
                             public ::testing::WithParamInterface<PreemptionMode> {
 protected:
  // One step: every slot's drafts verified against the target, the accepted
  // ones and the target's token after them returned, in order.
  std::vector<SequenceOutput> spec_step(std::vector<size_t>* appended = nullptr) {
    last_plan = schedule();
    std::vector<SampledToken> sampled;
    for (const SampleSlot& slot : last_plan.samples) {
      const Sequence& seq = scheduler->sequence(slot.seq_id);
      // The pending token's position: after the drafts.
      int64_t position = seq.num_tokens() - 1 - static_cast<int64_t>(slot.draft_token_ids.size());
      for (const int32_t draft : slot.draft_token_ids) {
        if (draft != target_token(seq, position)) break;
        SampledToken t{slot.seq_id, draft, {}, {}};
        t.accepted_draft = true;
        sampled.push_back(t);
        ++position;
      }
      sampled.push_back({slot.seq_id, target_token(seq, position), {}, {}});
    }
    std::vector<SequenceOutput> finished = scheduler->update(sampled, appended);
    // A running sequence holds the blocks of its computed tokens, no more.
    for (const SequenceId id : running_ids()) {
      if (!scheduler->has_sequence(id) || !kv->has_blocks(id)) continue;
      const Sequence& seq = scheduler->sequence(id);
      if (seq.status != SequenceStatus::running) continue;
      EXPECT_EQ(kv->block_table(id).size(),
                static_cast<size_t>((seq.num_computed_tokens + 3) / 4))
          << "sequence " << id << " with " << seq.num_computed_tokens << " computed tokens";
    }
    return finished;
  }

  std::vector<SequenceId> running_ids() const {
    std::vector<SequenceId> ids;
    for (const ScheduledSequence& s : last_plan.sequences) ids.push_back(s.seq_id);
    return ids;
  }

  Outcomes run(bool speculate) {
    SchedulerConfig config;
    config.max_num_batched_tokens = 8;  // prompts run in chunks
    config.preemption_mode = GetParam();
    config.num_speculative_tokens = speculate ? 3 : 0;
    make(config, blocks(/*device=*/10, /*host=*/8, /*prefix_caching=*/true));
    if (speculate) scheduler->set_drafter(&drafter);
    const std::vector<std::pair<int64_t, int64_t>> shapes = {{13, 19}, {6, 22}, {3, 17},
                                                             {17, 15}, {9, 20}, {5, 18}};
    for (size_t i = 0; i < shapes.size(); ++i) {
      // Every other prompt starts with the same 8 tokens: prefix-cache hits.
      Request r = request("r" + std::to_string(i), shapes[i].first, shapes[i].second,
                          i % 2 == 0 ? 10 : 30 + static_cast<int32_t>(i));
      if (i == 1) r.n = 2;
      if (i % 3 == 0) r.stop.ignore_eos = true;
      scheduler->add_request(std::move(r));
    }
    Outcomes outcomes;
    for (int i = 0; i < 1000 && scheduler->has_unfinished(); ++i)
      for (const SequenceOutput& out : spec_step())
        outcomes[{out.request_id, out.sample_index}] = {out.token_ids, out.finish_reason};
    EXPECT_FALSE(scheduler->has_unfinished());
    return outcomes;
  }

  ScriptedDrafter drafter;
};

TEST_P(SpeculativeScheduler, OutputsAreThoseWithoutDrafts) {
  const Outcomes plain = run(false);
  const SchedulerStats plain_stats = scheduler->stats();
  TearDown();  // the first run's blocks must all be back
  const Outcomes speculated = run(true);
  EXPECT_EQ(speculated, plain);
  const SchedulerStats& stats = scheduler->stats();
  const SpecDecodeStats& spec = stats.spec_decode;
  EXPECT_GT(spec.num_accepted_tokens, 0);
  EXPECT_LT(spec.num_accepted_tokens, spec.num_draft_tokens);
  EXPECT_LT(stats.num_steps, plain_stats.num_steps) << "speculation saved no step";
  EXPECT_GT(stats.num_preemptions_recompute + stats.num_preemptions_swap, 0);
  ASSERT_EQ(spec.accepted_per_position.size(), 3u);
  int64_t drafted = 0, accepted = 0;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_LE(spec.accepted_per_position[i], spec.drafts_per_position[i]);
    if (i > 0) {
      EXPECT_LE(spec.accepted_per_position[i], spec.accepted_per_position[i - 1]);
    }
    drafted += spec.drafts_per_position[i];
    accepted += spec.accepted_per_position[i];
  }
  EXPECT_EQ(drafted, spec.num_draft_tokens);
  EXPECT_EQ(accepted, spec.num_accepted_tokens);
}

INSTANTIATE_TEST_SUITE_P(Preemption, SpeculativeScheduler,
                         ::testing::Values(PreemptionMode::recompute, PreemptionMode::swap));


// A draft can end the sequence: the target accepts an end-of-sequence
// draft; the tokens after it in the step's result join no output.
TEST_F(SpeculativeDrafts, AnAcceptedEndOfSequenceDraftEndsTheSequence) {
  SchedulerConfig config;
  config.num_speculative_tokens = 3;
  make(config, blocks(8));
  struct EosDrafter final : Drafter {
    std::vector<Draft> propose(std::span<const DraftQuery> queries) override {
      return std::vector<Draft>(queries.size(), Draft{{50, 2, 51}, {}});
    }
  } drafter;
  scheduler->set_drafter(&drafter);
  scheduler->add_request(request("a", 3, 10));
  step();  // the prompt; samples 40
  StepPlan plan = schedule();
  ASSERT_EQ(plan.samples.size(), 1u);
  EXPECT_EQ(plan.samples[0].draft_token_ids, (Ids{50, 2, 51}));
  EXPECT_EQ(plan.sequences[0].num_draft_tokens, 3);
  EXPECT_EQ(plan.sequences[0].token_ids.size(), 4u);
  const SequenceId id = plan.samples[0].seq_id;
  std::vector<SampledToken> sampled(3, SampledToken{id, 0, {}, {}});
  sampled[0].token = 50;
  sampled[1].token = 2;
  sampled[0].accepted_draft = sampled[1].accepted_draft = true;
  sampled[2].token = 60;  // the target's token after the end: dropped
  std::vector<size_t> appended;
  const std::vector<SequenceOutput> done = scheduler->update(sampled, &appended);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].token_ids, (Ids{103, 50, 2}));
  EXPECT_EQ(done[0].finish_reason, FinishReason::eos);
  EXPECT_EQ(appended, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(done[0].num_draft_tokens, 3);
  EXPECT_EQ(done[0].num_accepted_tokens, 2);
  EXPECT_EQ(done[0].num_judged_draft_tokens, 2);  // the third was never judged
}

// The acceptance the control plans with counts what the verifier judged: a
// window of 3 whose second draft is rejected judged 2 (1 accepted), not 3;
// then a window of 1, rejected, judged 1.
TEST_F(SpeculativeDrafts, DraftsAfterARejectionAreNotCountedAsJudged) {
  SchedulerConfig config;
  config.num_speculative_tokens = 3;
  make(config, blocks(8));
  struct FixedDrafter final : Drafter {
    std::vector<Draft> propose(std::span<const DraftQuery> queries) override {
      const Ids window = {50, 51, 52};
      std::vector<Draft> drafts;
      for (const DraftQuery& q : queries)
        drafts.push_back({Ids(window.begin(), window.begin() + q.max_tokens), {}});
      return drafts;
    }
  } drafter;
  scheduler->set_drafter(&drafter);
  scheduler->add_request(request("a", 3, 5));
  step();  // the prompt; samples 40
  StepPlan plan = schedule();
  ASSERT_EQ(plan.samples.size(), 1u);
  ASSERT_EQ(plan.sequences[0].num_draft_tokens, 3);
  const SequenceId id = plan.samples[0].seq_id;
  std::vector<SampledToken> sampled(2, SampledToken{id, 0, {}, {}});
  sampled[0].token = 50;
  sampled[0].accepted_draft = true;
  sampled[1].token = 70;  // in place of 51: rejected, and 52 with it
  EXPECT_TRUE(scheduler->update(sampled, nullptr).empty());
  plan = schedule();
  ASSERT_EQ(plan.sequences[0].num_draft_tokens, 1);  // room for one: 5 - 3 - 1
  std::vector<SampledToken> rejected(1, SampledToken{id, 71, {}, {}});
  EXPECT_TRUE(scheduler->update(rejected, nullptr).empty());
  const std::vector<SequenceOutput> done = step();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].token_ids.size(), 5u);
  EXPECT_EQ(done[0].num_draft_tokens, 4);
  EXPECT_EQ(done[0].num_accepted_tokens, 1);
  EXPECT_EQ(done[0].num_judged_draft_tokens, 3);
}

// Drafts fit in max_tokens and in the context, and never preempt: with no
// free block for them, the sequence runs its one token alone.
TEST_F(SpeculativeDrafts, DraftsFitTheLimitsAndTheFreeBlocks) {
  SchedulerConfig config;
  config.num_speculative_tokens = 8;
  config.max_model_len = 9;
  make(config, blocks(4));  // 3 usable blocks of 4 tokens
  struct LongDrafter final : Drafter {
    std::vector<Draft> propose(std::span<const DraftQuery> queries) override {
      std::vector<Draft> drafts;
      for (const DraftQuery& q : queries) {
        max_tokens.push_back(q.max_tokens);
        drafts.push_back({Ids(static_cast<size_t>(q.max_tokens), 7), {}});
      }
      return drafts;
    }
    std::vector<int> max_tokens;
  } drafter;
  scheduler->set_drafter(&drafter);
  scheduler->add_request(request("a", 3, 4));  // 3 + 4 tokens < the context of 9
  step();
  StepPlan plan = schedule();
  // 1 output so far: 3 more at most, the last of them the target's.
  ASSERT_EQ(drafter.max_tokens, (std::vector<int>{2}));
  EXPECT_EQ(plan.samples.at(0).draft_token_ids, (Ids{7, 7}));
  scheduler->update(std::vector<SampledToken>{{plan.samples[0].seq_id, 11, {}, {}}});
  EXPECT_EQ(scheduler->stats().spec_decode.num_accepted_tokens, 0);
  run_to_completion();

  // Two sequences each need a new block for their next token, and two are
  // free: the first's drafts, which would need a third, must not take the
  // second's block (and so preempt it); they shrink to what fits.
  config.max_model_len = 0;
  make(config, blocks(5));  // 4 usable blocks
  drafter.max_tokens.clear();
  scheduler->set_drafter(&drafter);
  scheduler->add_request(request("b", 4, 9));
  scheduler->add_request(request("c", 4, 9));
  step();  // both prompts: 2 blocks, 2 left
  plan = schedule();
  EXPECT_EQ(drafter.max_tokens, (std::vector<int>{7, 7}));
  ASSERT_EQ(plan.sequences.size(), 2u);
  EXPECT_EQ(plan.sequences[0].num_draft_tokens, 3);  // positions 5-7, in its new block
  EXPECT_EQ(plan.sequences[1].num_draft_tokens, 3);
  EXPECT_EQ(scheduler->stats().num_preemptions_recompute + scheduler->stats().num_preemptions_swap,
            0);
  std::vector<SampledToken> sampled;
  for (const SampleSlot& slot : plan.samples) sampled.push_back({slot.seq_id, 11, {}, {}});
  scheduler->update(sampled);
  run_to_completion();
}

// A step costs 1 s up to 8 tokens (reading the weights), then 0.25 s per
// token more (compute): drafts are free for a few sequences, and cost more
// than they gain for many.
SpecCostModel memory_then_compute_bound() {
  SpecCostModel cost;
  cost.target.points = {{1, 1.0}, {8, 1.0}, {64, 15.0}};
  return cost;
}

TEST(SpecCost, GammaFollowsAcceptanceAndCost) {
  const SpecCostModel cost = memory_then_compute_bound();
  EXPECT_DOUBLE_EQ(cost.target.seconds(4), 1.0);
  EXPECT_DOUBLE_EQ(cost.target.seconds(16), 3.0);
  EXPECT_DOUBLE_EQ(cost.target.seconds(128), 31.0);  // the last segment, extended
  EXPECT_DOUBLE_EQ(estimated_acceptance(0, 0), 0.5);  // the prior
  EXPECT_DOUBLE_EQ(estimated_acceptance(8, 8), 0.9);
  using Lengths = std::vector<int>;
  // Free drafts (the step stays under 8 tokens): all of γ, however poor.
  EXPECT_EQ(plan_draft_lengths(cost, {0.1}, {4}, 2), Lengths{4});
  EXPECT_EQ(plan_draft_lengths(cost, {0.5, 0.5}, {3, 3}, 2), (Lengths{3, 3}));
  // Free up to 8 tokens, then 0.25 s each: one sequence in a step of 4
  // tokens drafts 4 for free, and a fifth only if it gains enough: at α
  // 0.9 (0.9^5 = 0.59 tokens for 0.25 s against 4.1 tokens in 1 s) no,
  // the same at α 0.99 and a 16-token step (3 s for one token so far) yes.
  EXPECT_EQ(plan_draft_lengths(cost, {0.9}, {8}, 4), Lengths{4});
  EXPECT_EQ(plan_draft_lengths(cost, {0.99}, {8}, 16), Lengths{8});
  // Twenty sequences at α 0.5, in a step of 20 tokens (4 s): a draft token
  // gains 0.5 tokens for 0.25 s, less than the step's 5 tokens a second.
  EXPECT_EQ(plan_draft_lengths(cost, std::vector<double>(20, 0.5), Lengths(20, 3), 20),
            Lengths(20, 0));
  // A poor sequence beside a good one in a 16-token step (3 s, 2 tokens):
  // the good one drafts, the poor one (0.05 tokens for 0.25 s) does not.
  const Lengths mixed = plan_draft_lengths(cost, {0.95, 0.05}, {4, 4}, 16);
  EXPECT_GT(mixed[0], 0);
  EXPECT_EQ(mixed[1], 0);
  // Without a cost model, every cap.
  EXPECT_EQ(plan_draft_lengths(SpecCostModel{}, {0.1, 0.2}, {3, 2}, 64), (Lengths{3, 2}));
}

// The control in the scheduler: one sequence speculates, a crowd of them
// does not, and when the crowd is gone the last one speculates again.
TEST_F(SpeculativeDrafts, TheControlTurnsDraftsOffUnderLoadAndOnAgain) {
  SchedulerConfig config;
  config.num_speculative_tokens = 3;
  make(config, blocks(200));
  ScriptedDrafter drafter;
  scheduler->set_drafter(&drafter);
  scheduler->set_spec_cost(memory_then_compute_bound());
  const auto drafted = [&] {
    int64_t n = 0;
    for (const ScheduledSequence& s : last_plan.sequences) n += s.num_draft_tokens;
    return n;
  };
  scheduler->add_request(request("long", 4, 40));
  step();  // its prompt
  step();
  EXPECT_GT(drafted(), 0) << "one sequence: drafts are free";
  const int64_t declined = scheduler->stats().spec_decode.num_steps_declined;
  for (int i = 0; i < 24; ++i) scheduler->add_request(request(str_cat("crowd", i), 4, 3));
  step();  // the crowd's prompts; the first sequence decodes
  step();
  EXPECT_EQ(drafted(), 0) << "25 sequences: drafts do not pay";
  EXPECT_GT(scheduler->stats().spec_decode.num_steps_declined, declined);
  for (int i = 0; i < 6; ++i) step();  // the crowd finishes (3 tokens each)
  ASSERT_EQ(scheduler->num_running(), 1u);
  step();
  EXPECT_GT(drafted(), 0) << "alone again: drafts are back";
  run_to_completion();
}

TEST(NgramLookup, ProposesWhatFollowedTheLatestEarlierMatch) {
  const NgramConfig config{1, 3};
  // The last 3 tokens, 5 6 7, occurred twice before: the latest (at 5) was
  // followed by 1 2 5.
  const Ids tokens = {5, 6, 7, 8, 9, 5, 6, 7, 1, 2, 5, 6, 7};
  EXPECT_EQ(ngram_lookup(tokens, config, 3), (Ids{1, 2, 5}));
  EXPECT_EQ(ngram_lookup(tokens, config, 1), (Ids{1}));
  // Shorter n when the longer finds nothing: "4 9" never occurred, "9" did.
  EXPECT_EQ(ngram_lookup(Ids{9, 3, 3, 4, 9}, config, 2), (Ids{3, 3}));
  // Proposals stop at the end of the sequence.
  EXPECT_EQ(ngram_lookup(Ids{1, 2, 1}, config, 5), (Ids{2, 1}));
  EXPECT_TRUE(ngram_lookup(Ids{1, 2, 3}, config, 3).empty());
  EXPECT_TRUE(ngram_lookup(Ids{1}, config, 3).empty());
  // min_n 2: a single repeated token is not enough.
  EXPECT_TRUE(ngram_lookup(Ids{4, 1, 2, 4}, NgramConfig{2, 3}, 3).empty());
  EXPECT_THROW(validate(NgramConfig{0, 3}), Error);
  EXPECT_THROW(validate(NgramConfig{3, 2}), Error);
}

}  // namespace
}  // namespace hive
