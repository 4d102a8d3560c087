// EngineCore without any transport: requests spread over ranks, steps in
// flight completed in order, events per token and per finished sample, the
// fault policy (what ran on the failed rank fails, the rest is recomputed,
// three faults in a row stop the engine) and cancellation.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "runtime/engine/engine_core.hpp"

namespace hive {
namespace {

EngineCoreConfig config(int ranks, int depth = 1) {
  EngineCoreConfig c;
  c.kv_cache.block_size = 4;
  c.kv_cache.num_device_blocks = 32;
  c.num_ranks = ranks;
  c.scheduler.async_scheduling = depth > 1;
  c.vocab_size = 100;
  return c;
}

Request request(const std::string& id, int64_t max_tokens, int n = 1) {
  Request r;
  r.id = id;
  r.prompt_token_ids = {5, 6, 7};
  r.stop.max_tokens = max_tokens;
  r.n = n;
  r.sampling.temperature = n > 1 ? 1.0f : 0.0f;
  return r;
}

// Every sample slot of every rank's plan sampled token 42.
std::vector<std::vector<SampledToken>> sample_all(const CoreStep& step) {
  std::vector<std::vector<SampledToken>> sampled(step.plans.size());
  for (size_t r = 0; r < step.plans.size(); ++r)
    for (const SampleSlot& slot : step.plans[r].samples) sampled[r].push_back({slot.seq_id, 42, {}, {}});
  return sampled;
}

// Steps until nothing is unfinished; the events of every step, in order.
CoreEvents run(EngineCore& core) {
  CoreEvents all;
  for (int i = 0; i < 100 && core.has_unfinished(); ++i) {
    const std::optional<CoreStep> step = core.next_step();
    if (!step) break;
    CoreEvents events = core.complete_step(step->id, sample_all(*step));
    for (NewToken& t : events.tokens) all.tokens.push_back(std::move(t));
    for (FinishedSample& f : events.finished) all.finished.push_back(std::move(f));
  }
  EXPECT_FALSE(core.has_unfinished());
  return all;
}

TEST(EngineCore, SpreadsRequestsOverRanksAndStreamsEveryToken) {
  EngineCore core(config(2));
  core.add_request(request("a", 3));
  core.add_request(request("b", 2));
  core.add_request(request("c", 1));
  EXPECT_EQ(core.scheduler(0).num_waiting(), 2u);  // a and c: the fewest unfinished, lowest on ties
  EXPECT_EQ(core.scheduler(1).num_waiting(), 1u);
  const CoreEvents events = run(core);
  std::map<std::string, int> tokens;
  for (const NewToken& t : events.tokens) ++tokens[t.request_id];
  EXPECT_EQ(tokens, (std::map<std::string, int>{{"a", 3}, {"b", 2}, {"c", 1}}));
  ASSERT_EQ(events.finished.size(), 3u);
  for (const FinishedSample& f : events.finished) {
    EXPECT_TRUE(f.request_done);
    EXPECT_TRUE(f.output.error.empty());
  }
  EXPECT_EQ(core.num_requests(), 0u);
  EXPECT_EQ(core.counters().num_finished_requests, 3);
  EXPECT_EQ(core.counters().num_generated_tokens, 6);
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(core.kv_cache(r).device_pool().num_free_blocks(),
              core.kv_cache(r).device_pool().num_allocatable_blocks());
}

TEST(EngineCore, RefusesBadRequestsQueueingNothing) {
  EngineCore core(config(1));
  core.add_request(request("a", 2));
  try {
    core.add_request(request("a", 2));
    FAIL() << "a duplicate id was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("request id 'a' is already in use"), std::string::npos);
  }
  Request bad = request("b", 2);
  bad.prompt_token_ids[1] = 100;
  EXPECT_THROW(core.add_request(bad), Error);
  EXPECT_EQ(core.num_requests(), 1u);
  run(core);
}

TEST(EngineCore, KeepsTwoStepsInFlightAndCompletesThemInOrder) {
  EngineCore core(config(1, 2));
  core.add_request(request("a", 4));
  const std::optional<CoreStep> first = core.next_step();
  const std::optional<CoreStep> second = core.next_step();
  ASSERT_TRUE(first && second);
  EXPECT_FALSE(core.next_step());  // two in flight: the depth
  EXPECT_EQ(core.num_in_flight(), 2u);
  EXPECT_THROW(core.complete_step(second->id, sample_all(*second)), Error);
  EXPECT_EQ(core.complete_step(first->id, sample_all(*first)).tokens.size(), 1u);
  EXPECT_EQ(core.complete_step(second->id, sample_all(*second)).tokens.size(), 1u);
  run(core);
}

TEST(EngineCore, AFaultFailsWhatRanOnItsRankAndRecomputesTheRest) {
  EngineCore core(config(2));
  core.add_request(request("a", 4));  // rank 0
  core.add_request(request("b", 4));  // rank 1
  const std::optional<CoreStep> step = core.next_step();
  ASSERT_TRUE(step);
  core.complete_step(step->id, sample_all(*step));
  const std::optional<CoreStep> doomed = core.next_step();
  ASSERT_TRUE(doomed);
  core.mark_ran(doomed->id);
  const CoreEvents events = core.on_fault(0, "worker rank 0 died");
  ASSERT_EQ(events.finished.size(), 1u);
  EXPECT_EQ(events.finished[0].output.request_id, "a");
  EXPECT_EQ(events.finished[0].output.error, "worker rank 0 died");
  EXPECT_EQ(core.num_in_flight(), 0u);
  // b goes on from its one token on a fresh cache and ends with all four.
  const CoreEvents rest = run(core);
  ASSERT_EQ(rest.finished.size(), 1u);
  EXPECT_EQ(rest.finished[0].output.request_id, "b");
  EXPECT_EQ(rest.finished[0].output.token_ids.size(), 4u);
  EXPECT_EQ(core.counters().num_failed_requests, 1);
  EXPECT_EQ(core.counters().num_finished_requests, 1);
}

TEST(EngineCore, ARequestThatNeverRanSurvivesAFault) {
  EngineCore core(config(1));
  core.add_request(request("a", 2));
  ASSERT_TRUE(core.next_step());  // planned, never taken up by a worker
  EXPECT_TRUE(core.on_fault(0, "the worker did not start").finished.empty());
  EXPECT_EQ(run(core).finished.size(), 1u);
}

TEST(EngineCore, StopsServingAfterThreeFaultsInARow) {
  EngineCore core(config(1));
  core.add_request(request("a", 2));
  for (int fault = 1; fault < EngineCore::kMaxConsecutiveFaults; ++fault) {
    ASSERT_TRUE(core.next_step());
    EXPECT_TRUE(core.on_fault(-1, "no start").finished.empty());
    EXPECT_TRUE(core.stopped_serving().empty());
  }
  ASSERT_TRUE(core.next_step());
  const CoreEvents events = core.on_fault(-1, "no start");
  ASSERT_EQ(events.finished.size(), 1u);
  EXPECT_NE(core.stopped_serving().find("failed 3 times in a row"), std::string::npos);
  EXPECT_EQ(events.finished[0].output.error, core.stopped_serving());
}

TEST(EngineCore, ACancelledRequestIsNotFailedByALaterShutdown) {
  EngineCore core(config(1));
  core.add_request(request("a", 4, 2));
  core.add_request(request("b", 4));
  core.abort_request("a", FinishReason::aborted, std::nullopt, /*cancelled=*/true);
  CoreEvents events;
  EXPECT_EQ(core.fail_all("shut down", events), 1);  // b only
  std::map<std::string, std::string> errors;
  for (const FinishedSample& f : events.finished) errors[f.output.request_id] = f.output.error;
  EXPECT_EQ(errors, (std::map<std::string, std::string>{{"a", ""}, {"b", "shut down"}}));
  EXPECT_EQ(core.num_requests(), 0u);
}

}  // namespace
}  // namespace hive
