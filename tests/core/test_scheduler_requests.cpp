// Scheduler and requests: stop conditions on token ids, parallel
// sampling with copy-on-write, prefix caching across requests, abort.
#include <map>

#include "tests/core/scheduler_fixture.hpp"

namespace hive {
namespace {

using test::Ids;
using test::Runs;

class RequestsTest : public test::SchedulerFixture {};

SchedulerConfig plain() {
  return SchedulerConfig{};
}

TEST_F(RequestsTest, StopsOnEosStopTokensAndLength) {
  make(plain(), blocks(64));
  // Each request's outputs follow a script (token 2 is end-of-sequence).
  const std::map<std::string, Ids> script = {
      {"eos", {5, 2, 5}}, {"ignore", {5, 2, 5}}, {"stop_id", {5, 9, 5}}, {"length", {0, 1, 3}}};
  next_token = [&](const Sequence& seq) {
    return script.at(seq.request->id)[static_cast<size_t>(seq.num_output_tokens() - 1)];
  };
  Request eos = request("eos", 3, 3), ignore = request("ignore", 3, 3),
          stop_id = request("stop_id", 3, 3), length = request("length", 3, 3);
  ignore.stop.ignore_eos = true;
  stop_id.stop.stop_token_ids = {9};
  for (Request* r : {&eos, &ignore, &stop_id, &length}) scheduler->add_request(*r);
  std::map<std::string, SequenceOutput> out;
  for (SequenceOutput& o : run_to_completion()) out[o.request_id] = o;

  EXPECT_EQ(out["eos"].finish_reason, FinishReason::eos);
  EXPECT_EQ(out["eos"].token_ids, (Ids{5, 2}));
  EXPECT_EQ(out["ignore"].finish_reason, FinishReason::length);
  EXPECT_EQ(out["ignore"].token_ids, (Ids{5, 2, 5}));
  EXPECT_EQ(out["stop_id"].finish_reason, FinishReason::stop_token);
  EXPECT_EQ(out["stop_id"].token_ids, (Ids{5, 9}));
  EXPECT_EQ(out["length"].finish_reason, FinishReason::length);
  EXPECT_EQ(out["length"].token_ids, (Ids{0, 1, 3}));
}

// A stop string is found above the core (the output processor); the core
// ends just that sample, with the reason it is given, and frees its blocks.
TEST_F(RequestsTest, EndsOneSampleWithTheReasonItIsGiven) {
  make(plain(), blocks(64));
  Request r = request("r", 3, 6);
  r.n = 2;
  r.stop.ignore_eos = true;
  scheduler->add_request(r);
  std::vector<SequenceOutput> out;
  for (int i = 0; i < 3; ++i) {
    std::vector<SequenceOutput> finished = step();
    out.insert(out.end(), finished.begin(), finished.end());
  }
  ASSERT_TRUE(out.empty());
  scheduler->abort_request("r", FinishReason::stop_string, 1);
  for (SequenceOutput& o : run_to_completion()) out.push_back(std::move(o));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].sample_index, 1);
  EXPECT_EQ(out[0].finish_reason, FinishReason::stop_string);
  EXPECT_LT(out[0].token_ids.size(), 6u);
  EXPECT_EQ(out[1].sample_index, 0);
  EXPECT_EQ(out[1].finish_reason, FinishReason::length);
  EXPECT_EQ(out[1].token_ids.size(), 6u);
}

// A request without a seed gets a random one when it arrives, kept for its
// whole life (every step and every sample draws from it), so unseeded
// requests do not all draw the same stream.
TEST_F(RequestsTest, ARequestWithoutASeedDrawsARandomOneOnce) {
  make(plain(), blocks(16));
  Request a = request("a", 4, 3), b = request("b", 4, 3);
  a.n = 2;
  a.sampling.temperature = b.sampling.temperature = 1.0f;
  scheduler->add_request(a);
  scheduler->add_request(b);
  step();
  std::map<SequenceId, uint64_t> seeds;
  for (const SampleSlot& slot : last_plan.samples) {
    ASSERT_TRUE(slot.sampling && slot.sampling->seed.has_value());
    seeds[slot.seq_id] = *slot.sampling->seed;
  }
  ASSERT_EQ(seeds.size(), 3u);              // a's two samples and b
  EXPECT_EQ(seeds.at(2), seeds.at(0) + 1);  // a's second sample: a's seed + 1
  EXPECT_NE(seeds.at(1), seeds.at(0));      // b's own random seed
  step();  // the runner's samplers keep the seeds: nothing is sent again
  for (const SampleSlot& slot : last_plan.samples)
    EXPECT_FALSE(slot.sampling.has_value()) << "seq " << slot.seq_id;
  run_to_completion();
}

// A sequence whose logits could not be sampled (all NaN) fails alone, with
// the sampler's error; the other sequences of the batch go on.
TEST_F(RequestsTest, ASequenceThatCouldNotBeSampledFailsAlone) {
  make(plain(), blocks(16));
  scheduler->add_request(request("bad", 4, 5));
  scheduler->add_request(request("good", 4, 5, 20));
  last_plan = schedule();
  std::vector<SampledToken> sampled;
  for (const SampleSlot& slot : last_plan.samples) {
    const bool bad = scheduler->sequence(slot.seq_id).request->id == "bad";
    sampled.push_back({slot.seq_id, bad ? -1 : 7, {}, bad ? "no token can be sampled" : ""});
  }
  const std::vector<SequenceOutput> out = scheduler->update(sampled);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].request_id, "bad");
  EXPECT_EQ(out[0].finish_reason, FinishReason::aborted);
  EXPECT_EQ(out[0].error, "no token can be sampled");
  EXPECT_TRUE(out[0].token_ids.empty());
  const std::vector<SequenceOutput> rest = run_to_completion();
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].request_id, "good");
  EXPECT_EQ(rest[0].finish_reason, FinishReason::length);
  EXPECT_EQ(rest[0].token_ids.size(), 5u);
}

TEST_F(RequestsTest, ParallelSamplesShareThePromptAndCopyOnWrite) {
  make(plain(), blocks(16));
  Request r = request("n3", 6, 3);
  r.n = 3;
  r.sampling.seed = 40;
  scheduler->add_request(r);
  step();  // the prompt runs once; three samples read its last row
  EXPECT_EQ(runs(), (Runs{{0, 0, 6}}));
  ASSERT_EQ(last_plan.samples.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(last_plan.samples[k].scheduled_index, 0u);
    EXPECT_EQ(last_plan.samples[k].sampling->seed, 40u + k);  // sample k draws with seed + k
  }
  EXPECT_EQ(scheduler->num_running(), 3u);
  EXPECT_EQ(kv->device_pool().ref_count(1), 3);
  EXPECT_EQ(kv->device_pool().ref_count(2), 3);
  step();  // all append into shared block 2: the first two copy, the last writes in place
  EXPECT_EQ(runs(), (Runs{{0, 6, 1}, {1, 6, 1}, {2, 6, 1}}));
  EXPECT_EQ(last_plan.copy_on_write, (std::vector<BlockCopy>{{2, 3}, {2, 4}}));
  EXPECT_EQ(table(0), (Ids{1, 3}));
  EXPECT_EQ(table(1), (Ids{1, 4}));
  EXPECT_EQ(table(2), (Ids{1, 2}));
  EXPECT_EQ(kv->device_pool().ref_count(1), 3);
  const auto outputs = run_to_completion();
  ASSERT_EQ(outputs.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(outputs[static_cast<size_t>(k)].request_id, "n3");
    EXPECT_EQ(outputs[static_cast<size_t>(k)].sample_index, k);
  }
}

TEST_F(RequestsTest, PrefixCachingSkipsTheSharedBlocks) {
  make(plain(), blocks(16, 0, /*prefix_caching=*/true));
  scheduler->add_request(request("first", 10, 1));
  run_to_completion();  // its blocks [1, 2, 3] are free but cached: 1 and 2 are full
  Request second = request("second", 10, 1);
  second.prompt_token_ids.resize(13, 77);
  scheduler->add_request(second);
  step();
  EXPECT_EQ(runs(), (Runs{{1, 8, 5}}));
  EXPECT_EQ(table(0), (Ids{1, 2, 4, 5}));
  run_to_completion();
  EXPECT_EQ(kv->stats().prefix_hit_tokens, 8);
  EXPECT_EQ(kv->stats().prefix_queried_tokens, 10 + 13);
}

TEST_F(RequestsTest, AbortFreesBlocksAndReportsOnTheNextUpdate) {
  make(plain(), blocks(16));
  scheduler->add_request(request("a", 5, 10));
  scheduler->add_request(request("b", 5, 2));
  step();
  scheduler->abort_request("a");
  scheduler->abort_request("unknown");
  EXPECT_FALSE(kv->has_blocks(0));
  const auto finished = step();
  EXPECT_EQ(last_plan.finished_seq_ids, (std::vector<SequenceId>{0}));  // workers drop it
  EXPECT_EQ(runs(), (Runs{{1, 5, 1}}));
  ASSERT_EQ(finished.size(), 2u);
  EXPECT_EQ(finished[0].request_id, "a");
  EXPECT_EQ(finished[0].finish_reason, FinishReason::aborted);
  EXPECT_EQ(finished[0].token_ids.size(), 1u);
  EXPECT_EQ(finished[1].request_id, "b");
  EXPECT_EQ(finished[1].finish_reason, FinishReason::length);
}

// Samples 1..n-1 of a request fork off when its prompt completes. Aborted
// before that, whether waiting or part-way through a chunked prompt, the
// request still reports every one of its n samples.
TEST_F(RequestsTest, AbortBeforeTheForkReportsEverySample) {
  SchedulerConfig config = plain();
  config.max_num_batched_tokens = 4;
  make(config, blocks(16));
  Request chunked = request("chunked", 10, 3), waiting = request("waiting", 3, 3);
  chunked.n = 3;
  waiting.n = 2;
  scheduler->add_request(chunked);
  scheduler->add_request(waiting);
  step();  // 4 of chunked's 10 prompt tokens; waiting gets no budget
  EXPECT_EQ(runs(), (Runs{{0, 0, 4}}));
  scheduler->abort_request("chunked");
  scheduler->abort_request("waiting");
  std::map<std::string, std::vector<int>> samples;
  for (const SequenceOutput& out : step()) {
    EXPECT_EQ(out.finish_reason, FinishReason::aborted) << out.request_id;
    EXPECT_TRUE(out.token_ids.empty()) << out.request_id;
    samples[out.request_id].push_back(out.sample_index);
  }
  EXPECT_EQ(samples["chunked"], (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(samples["waiting"], (std::vector<int>{0, 1}));
  EXPECT_FALSE(scheduler->has_unfinished());
  EXPECT_EQ(kv->device_pool().num_free_blocks(), kv->device_pool().num_allocatable_blocks());
}

}  // namespace
}  // namespace hive
