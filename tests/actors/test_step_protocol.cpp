// The step protocol under a deterministic scheduler: one plan message per
// step to the worker (two steps in flight with async scheduling, one
// without), its reply back, tokens streamed to the owner, and outputs
// identical to the offline engine's.
#define CAF_SUITE step_protocol
#include "tests/actors/actor_fixture.hpp"

#include <algorithm>
#include <functional>
#include <iterator>
#include <set>

#include "base/error.hpp"

using namespace hive;
using namespace hive::test;

CAF_TEST_FIXTURE_SCOPE(step_protocol_tests, ActorFixture)

CAF_TEST(one plan per step and the sampled tokens back to the owner) {
  const Request request = make_request("a", {5, 9, 13, 2, 7, 11}, 5);
  submit(request);
  expect((submit_atom, Submission), from(self).to(scheduler_hdl).with(_, _));
  // Async scheduling: the prompt's step and the step of the token it samples
  // (pending) go out together.
  CAF_CHECK_EQUAL(scheduler_state().in_flight.size(), 2u);
  const worker_actor worker = worker_hdl();
  expect((step_atom, WorkerStep), from(scheduler_hdl).to(worker).with(_, _));
  auto& worker_state = deref<worker_actor::stateful_base<WorkerState>>(worker).state;
  CAF_CHECK_EQUAL(worker_state.runner->num_block_tables(), 1u);
  expect((WorkerResult), from(worker).to(scheduler_hdl).with(_));
  // Step 1's result sent step 3 before its token went out.
  CAF_CHECK_EQUAL(scheduler_state().in_flight.size(), 2u);
  CAF_CHECK_EQUAL(scheduler_state().in_flight.back().id, 3);
  expect((OutputBatch), from(scheduler_hdl).to(sink).with(_));
  CAF_CHECK_EQUAL(streamed("a").size(), 1u);
  expect((step_atom, WorkerStep), from(scheduler_hdl).to(worker).with(_, _));
  run();
  const std::vector<int32_t> expected = reference(request);
  CAF_CHECK_EQUAL(streamed("a"), expected);
  const TokenEvent* done = finished_event("a");
  CAF_REQUIRE(done != nullptr);
  CAF_CHECK_EQUAL(done->token_ids, expected);
  CAF_CHECK(done->reason() == FinishReason::length);
  CAF_CHECK(done->error.empty());
  const EngineMetrics m = metrics();
  // The prompt in one step, then 4 decode steps: none computes the 5th
  // token, which is known to be the last when it is sampled.
  CAF_CHECK_EQUAL(m.num_steps, 5);
  CAF_CHECK_EQUAL(m.num_generated_tokens, 5);
  CAF_CHECK_EQUAL(m.num_finished_requests, 1);
  CAF_CHECK_EQUAL(m.num_free_blocks, m.num_blocks);
}

CAF_TEST(batched requests with a chunked prompt match the offline engine) {
  std::vector<int32_t> long_prompt;
  for (int32_t i = 0; i < 23; ++i) long_prompt.push_back((i * 7 + 3) % 97);
  const Request a = make_request("a", long_prompt, 7);
  const Request b = make_request("b", {4, 8, 15, 16}, 9);
  Request c = make_request("c", {21, 22, 23}, 4);
  c.n = 2;
  c.sampling.temperature = 0.8f;
  c.sampling.seed = 11;
  submit(a);
  submit(b);
  submit(c);
  run();
  CAF_CHECK_EQUAL(streamed("a"), reference(a));
  CAF_CHECK_EQUAL(streamed("b"), reference(b));
  LLMEngine offline(*model, config);
  const RequestOutput c_out = offline.generate({c}).at(0);
  for (const TokenEvent& e : events())
    if (e.request_id == "c" && e.finished)
      CAF_CHECK_EQUAL(e.token_ids, c_out.samples.at(static_cast<size_t>(e.sample_index)).token_ids);
  const EngineMetrics m = metrics();
  CAF_CHECK_EQUAL(m.num_finished_requests, 3);
  CAF_CHECK_EQUAL(m.num_generated_tokens, 7 + 9 + 2 * 4);
  CAF_CHECK_EQUAL(m.num_free_blocks, m.num_blocks);
}

CAF_TEST(a request that can never run fails at submission with the reason) {
  submit(make_request("bad", {5, 100000}, 3));
  run();
  const TokenEvent* done = finished_event("bad");
  CAF_REQUIRE(done != nullptr);
  CAF_CHECK_EQUAL(done->sample_index, -1);
  CAF_CHECK(done->error.find("prompt token id 100000 is out of range") != std::string::npos);
  CAF_CHECK_EQUAL(metrics().num_steps, 0);
}

CAF_TEST_FIXTURE_SCOPE_END()

namespace {

struct OneStepFixture : ActorFixture {
  static EngineConfig config() {
    EngineConfig c = small_engine_config();
    c.scheduler.async_scheduling = false;
    return c;
  }
  OneStepFixture() : ActorFixture(config()) {}
};

}  // namespace

CAF_TEST_FIXTURE_SCOPE(one_step_tests, OneStepFixture)

CAF_TEST(without async scheduling the next plan goes out only after the reply) {
  const Request request = make_request("a", {5, 9, 13, 2, 7, 11}, 5);
  submit(request);
  expect((submit_atom, Submission), from(self).to(scheduler_hdl).with(_, _));
  CAF_CHECK_EQUAL(scheduler_state().in_flight.size(), 1u);
  const worker_actor worker = worker_hdl();
  expect((step_atom, WorkerStep), from(scheduler_hdl).to(worker).with(_, _));
  expect((WorkerResult), from(worker).to(scheduler_hdl).with(_));
  CAF_CHECK_EQUAL(scheduler_state().in_flight.size(), 1u);
  CAF_CHECK_EQUAL(scheduler_state().in_flight.front().id, 2);
  expect((OutputBatch), from(scheduler_hdl).to(sink).with(_));
  expect((step_atom, WorkerStep), from(scheduler_hdl).to(worker).with(_, _));
  run();
  CAF_CHECK_EQUAL(streamed("a"), reference(request));
  CAF_CHECK_EQUAL(metrics().num_steps, 5);
}

CAF_TEST_FIXTURE_SCOPE_END()

namespace {

// Every prompt of the tests below fits in one step.
struct WideStepFixture : ActorFixture {
  static EngineConfig config() {
    EngineConfig c = small_engine_config();
    c.scheduler.max_num_batched_tokens = 64;
    return c;
  }
  WideStepFixture() : ActorFixture(config()) {}
};

}  // namespace

CAF_TEST_FIXTURE_SCOPE(output_batch_tests, WideStepFixture)

// Eight requests of equal length on each consumer, all prompts in the first
// step: every step that has outputs sends each consumer one OutputBatch with
// all its requests' deltas (one message per token and request would be eight
// per consumer and step).
CAF_TEST(one output message per consumer per step) {
  const token_sink other = sys.spawn<Collector>();
  for (int i = 0; i < 8; ++i) {
    submit(make_request(str_cat("a", i), {3, 5, 7}, 6));
    self->send(scheduler_hdl, submit_atom_v,
               Submission{make_request(str_cat("b", i), {3, 5, 7}, 6), other});
  }
  run();
  const EngineMetrics m = metrics();
  CAF_CHECK_EQUAL(m.num_finished_requests, 16);
  CAF_CHECK_EQUAL(m.num_generated_tokens, 16 * 6);
  CAF_CHECK(m.num_output_steps >= 6);
  const auto& mine = deref<token_sink::stateful_base<CollectorState>>(sink).state;
  const auto& theirs = deref<token_sink::stateful_base<CollectorState>>(other).state;
  // At most one message per consumer and step, and each step with outputs
  // reached the consumers it had outputs for (both, once each has started).
  std::set<int64_t> steps;
  for (const auto* collector : {&mine, &theirs}) {
    const std::vector<int64_t>& ids = collector->batch_steps;
    CAF_CHECK(std::adjacent_find(ids.begin(), ids.end(), std::greater_equal<>()) == ids.end());
    steps.insert(ids.begin(), ids.end());
  }
  CAF_CHECK_EQUAL(static_cast<int64_t>(steps.size()), m.num_output_steps);
  CAF_CHECK_EQUAL(m.num_output_messages,
                  static_cast<int64_t>(mine.batch_steps.size() + theirs.batch_steps.size()));
  // The steps that decoded all sixteen requests sent two messages each.
  std::vector<int64_t> both;
  std::set_intersection(mine.batch_steps.begin(), mine.batch_steps.end(),
                        theirs.batch_steps.begin(), theirs.batch_steps.end(),
                        std::back_inserter(both));
  CAF_CHECK(both.size() >= 5u);
  // Per request, one event per token (one token per step) and one finished.
  CAF_CHECK_EQUAL(mine.events.size(), size_t{8 * 6 + 8});
  CAF_CHECK_EQUAL(theirs.events.size(), size_t{8 * 6 + 8});
  for (int i = 0; i < 8; ++i) {
    const std::string id = str_cat("a", i);
    CAF_CHECK_EQUAL(streamed(id), reference(make_request(id, {3, 5, 7}, 6)));
  }
}

CAF_TEST(a consumer alone gets one message per step for all its requests) {
  for (int i = 0; i < 8; ++i) submit(make_request(str_cat("r", i), {3, 5, 7}, 6));
  run();
  const EngineMetrics m = metrics();
  CAF_CHECK_EQUAL(m.num_generated_tokens, 8 * 6);
  CAF_CHECK_EQUAL(m.num_output_messages, m.num_output_steps);
  CAF_CHECK(m.num_output_messages < 8 * 6);
}

CAF_TEST_FIXTURE_SCOPE_END()
