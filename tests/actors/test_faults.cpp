// Worker faults: a step that throws, a worker that times out and one that
// dies. Each fails exactly the requests whose KV the worker held, frees
// their blocks, restarts the worker and keeps serving.
#define CAF_SUITE faults
#include "tests/actors/actor_fixture.hpp"

#include "actors/engine.hpp"

using namespace hive;
using namespace hive::test;

namespace {

EngineConfig one_at_a_time() {
  EngineConfig config = small_engine_config();
  config.scheduler.max_num_seqs = 1;  // a second request waits, untouched by the worker
  return config;
}

struct FaultFixture : ActorFixture {
  FaultFixture() : ActorFixture(one_at_a_time()) {}

  // r streamed the offline engine's tokens and finished without an error.
  void check_completed(const Request& r) {
    CAF_CHECK_EQUAL(streamed(r.id), reference(r));
    const TokenEvent* done = finished_event(r.id);
    CAF_REQUIRE(done != nullptr);
    CAF_CHECK_EQUAL(done->error, "");
  }

  // Kills the worker, runs until its replacement is spawned but not started,
  // and has the scheduler take in `r`. Returns the replacement.
  worker_actor submit_before_the_worker_starts(const Request& r) {
    const worker_actor first = worker_hdl();
    self->send_exit(first, caf::exit_reason::kill);
    run_until([&] { return !scheduler_state().workers.empty() && worker_hdl() != first; });
    submit(r);
    expect((submit_atom, Submission), from(self).to(scheduler_hdl).with(_, _));
    return worker_hdl();
  }
};

}  // namespace

CAF_TEST_FIXTURE_SCOPE(fault_tests, FaultFixture)

CAF_TEST(a worker that throws fails its running request and the engine keeps serving) {
  const Request running = make_request("running", {3, 1, 4, 1, 5}, 12);
  const Request waiting = make_request("waiting", {2, 7, 1, 8}, 5);
  submit(running);
  submit(waiting);
  run_until([&] { return streamed("running").size() >= 2; });
  const worker_actor first_worker = worker_hdl();
  self->send(scheduler_hdl, fault_atom_v, 0);
  run();
  const TokenEvent* failed = finished_event("running");
  CAF_REQUIRE(failed != nullptr);
  CAF_CHECK(failed->error.find("worker rank 0 failed in step") != std::string::npos);
  CAF_CHECK(failed->error.find("injected fault") != std::string::npos);
  CAF_CHECK(is_prefix(streamed("running"), reference(running)));
  // The waiting request never reached the worker: it runs on the new one.
  CAF_CHECK_EQUAL(streamed("waiting"), reference(waiting));
  CAF_CHECK(worker_hdl() != first_worker);
  EngineMetrics m = metrics();
  CAF_CHECK_EQUAL(m.num_worker_restarts, 1);
  CAF_CHECK_EQUAL(m.num_failed_requests, 1);
  CAF_CHECK_EQUAL(m.num_finished_requests, 1);
  CAF_CHECK_EQUAL(m.num_free_blocks, m.num_blocks);
  const Request after = make_request("after", {3, 1, 4, 1, 5}, 12);
  submit(after);
  run();
  CAF_CHECK_EQUAL(streamed("after"), reference(after));
}

CAF_TEST(a worker that does not answer in time is treated as failed) {
  const Request r = make_request("r", {6, 6, 6}, 4);
  submit(r);
  expect((submit_atom, Submission), from(self).to(scheduler_hdl).with(_, _));
  // The plan is in the worker's mailbox; fire the request's timeout first.
  CAF_CHECK_EQUAL(trigger_timeouts(), 1u);
  CAF_REQUIRE(sched.prioritize(scheduler_hdl));
  sched.run_once();  // the timer: the step is checked again behind the queued messages
  CAF_REQUIRE(sched.prioritize(scheduler_hdl));
  sched.run_once();  // that check, with the worker still busy
  run();
  const TokenEvent* failed = finished_event("r");
  CAF_REQUIRE(failed != nullptr);
  CAF_CHECK_EQUAL(failed->error, "worker rank 0 timed out in step 1");
  CAF_CHECK_EQUAL(metrics().num_worker_restarts, 1);
  const Request again = make_request("again", {6, 6, 6}, 4);
  submit(again);
  run();
  CAF_CHECK_EQUAL(streamed("again"), reference(again));
}

CAF_TEST(a reply queued behind the deadline timer that fired while the step ran counts) {
  // A worker on the scheduler's thread (not detached, as here) queues the
  // reply of a step that overran its deadline after the timer's message.
  const Request r = make_request("r", {6, 6, 6}, 4);
  submit(r);
  expect((submit_atom, Submission), from(self).to(scheduler_hdl).with(_, _));
  CAF_CHECK_EQUAL(trigger_timeouts(), 1u);
  CAF_REQUIRE(sched.prioritize(worker_hdl()));
  sched.run_once();  // the step; its reply now waits behind the timer
  run();
  check_completed(r);
  CAF_CHECK_EQUAL(metrics().num_worker_restarts, 0);
}

CAF_TEST(after a reply that came behind the deadline timer the next step is still watched) {
  const Request r = make_request("r", {6, 6, 6}, 12);
  submit(r);
  expect((submit_atom, Submission), from(self).to(scheduler_hdl).with(_, _));
  CAF_CHECK_EQUAL(trigger_timeouts(), 1u);
  CAF_REQUIRE(sched.prioritize(worker_hdl()));
  sched.run_once();  // step 1; its reply waits behind the timer
  CAF_REQUIRE(sched.prioritize(scheduler_hdl));
  sched.run_once();  // the timer: step 1 is checked again behind the queue
  CAF_REQUIRE(sched.prioritize(scheduler_hdl));
  sched.run_once();  // step 1's reply: step 3 goes out behind step 2
  CAF_REQUIRE(sched.prioritize(scheduler_hdl));
  sched.run_once();  // the check: step 1 is answered
  CAF_CHECK(scheduler_state().watchdog_armed);
  // The worker hangs in step 2 (it never runs again): its deadline fires.
  CAF_CHECK_EQUAL(trigger_timeouts(), 1u);
  CAF_REQUIRE(sched.prioritize(scheduler_hdl));
  sched.run_once();  // the timer
  CAF_REQUIRE(sched.prioritize(scheduler_hdl));
  sched.run_once();  // the check: step 2 is overdue
  run();
  const TokenEvent* failed = finished_event("r");
  CAF_REQUIRE(failed != nullptr);
  CAF_CHECK_EQUAL(failed->error, "worker rank 0 timed out in step 2");
  CAF_CHECK_EQUAL(metrics().num_worker_restarts, 1);
}

CAF_TEST(a request cancelled in a step that fails ends cancelled and not failed) {
  self->send(scheduler_hdl, fault_atom_v, 0);
  run();  // the worker's next step throws
  submit(make_request("r", {3, 1, 4, 1, 5}, 8));
  expect((submit_atom, Submission), from(self).to(scheduler_hdl).with(_, _));
  self->send(scheduler_hdl, cancel_atom_v, std::string("r"));
  expect((cancel_atom, std::string), from(self).to(scheduler_hdl).with(_, _));
  run();
  const TokenEvent* done = finished_event("r");
  CAF_REQUIRE(done != nullptr);
  CAF_CHECK(done->reason() == FinishReason::aborted);
  CAF_CHECK_EQUAL(done->error, "");
  const EngineMetrics m = metrics();
  CAF_CHECK_EQUAL(m.num_worker_restarts, 1);
  CAF_CHECK_EQUAL(m.num_failed_requests, 0);
  CAF_CHECK_EQUAL(m.num_free_blocks, m.num_blocks);
}

CAF_TEST(steps that each end before their deadline never time out) {
  // Simulated time runs 0.6 of a timeout per step, so the one deadline
  // timer fires several times while a step is in flight and re-arms itself.
  const Request r = make_request("r", {6, 6, 6}, 6);
  const auto timeout = scheduler_state().setup.core.scheduler.worker_timeout;
  submit(r);
  size_t fired = 0;
  for (size_t k = 1; k <= 6; ++k) {
    run_until([&] { return streamed("r").size() >= k; });
    fired += advance_time(timeout * 6 / 10);
  }
  run();
  CAF_CHECK_GREATER(fired, 1u);
  CAF_CHECK_EQUAL(streamed("r"), reference(r));
  CAF_CHECK_EQUAL(metrics().num_worker_restarts, 0);
}

CAF_TEST(a request whose step the worker never took up is not failed by its death) {
  // The worker is killed as r is submitted: r's first step goes to a worker
  // that is gone (or about to go) and never runs there.
  const Request r = make_request("r", {1, 2, 3, 4}, 5);
  submit(r);
  self->send_exit(worker_hdl(), caf::exit_reason::kill);
  run();
  check_completed(r);
  CAF_CHECK_EQUAL(metrics().num_worker_restarts, 1);
}

CAF_TEST(a worker that dies while idle is restarted) {
  self->send_exit(worker_hdl(), caf::exit_reason::kill);
  run();
  CAF_CHECK_EQUAL(metrics().num_worker_restarts, 1);
  const Request r = make_request("r", {1, 2, 3, 4}, 5);
  submit(r);
  run();
  CAF_CHECK_EQUAL(streamed("r"), reference(r));
}

CAF_TEST(a worker slower to start than the step deadline fails nothing) {
  // The replacement of a dead worker is spawned, not yet started (loading a
  // shard can take minutes), when r arrives: no step may go out, so no
  // deadline runs, however long the start takes.
  const Request r = make_request("r", {1, 2, 3, 4}, 5);
  submit_before_the_worker_starts(r);
  CAF_CHECK(scheduler_state().in_flight.empty());
  CAF_CHECK_EQUAL(advance_time(scheduler_state().setup.core.scheduler.worker_timeout * 3), 0u);
  run();
  check_completed(r);
  CAF_CHECK_EQUAL(metrics().num_worker_restarts, 1);
}

CAF_TEST(workers that do not start within the start timeout are a fault) {
  const Request r = make_request("r", {1, 2, 3, 4}, 5);
  const worker_actor hung = submit_before_the_worker_starts(r);
  // The new worker never gets to start; its start deadline passes.
  CAF_CHECK_GREATER_OR_EQUAL(
      advance_time(scheduler_state().setup.core.scheduler.worker_start_timeout), 1u);
  while (sched.prioritize(scheduler_hdl)) sched.run_once();  // the scheduler alone
  CAF_CHECK(worker_hdl() != hung);
  CAF_CHECK_EQUAL(metrics().num_worker_restarts, 2);
  run();
  // r never ran: it runs on the third generation, untouched.
  CAF_CHECK_EQUAL(streamed("r"), reference(r));
  CAF_CHECK_EQUAL(finished_event("r")->error, "");
}

CAF_TEST(workers that keep dying before a step completes stop the engine with the cause) {
  // Two faults, then a completed request: the count starts again.
  for (int i = 0; i < 2; ++i) {
    self->send_exit(worker_hdl(), caf::exit_reason::kill);
    run();
  }
  const Request r = make_request("r", {1, 2, 3, 4}, 5);
  submit(r);
  run();
  CAF_CHECK_EQUAL(streamed("r"), reference(r));
  // Three in a row: no fourth restart; what was queued fails, so do later submissions.
  for (int i = 0; i < 2; ++i) {
    self->send_exit(worker_hdl(), caf::exit_reason::kill);
    run();
  }
  CAF_CHECK_EQUAL(metrics().num_worker_restarts, 4);
  submit(make_request("queued", {5, 6}, 3));
  self->send_exit(worker_hdl(), caf::exit_reason::kill);
  run();
  CAF_CHECK(scheduler_state().workers.empty());
  submit(make_request("later", {5, 6}, 3));
  run();
  for (const std::string id : {"queued", "later"}) {
    const TokenEvent* failed = finished_event(id);
    CAF_REQUIRE(failed != nullptr);
    CAF_CHECK(failed->error.find("the workers failed 3 times in a row without completing a step; "
                                 "the last: worker rank 0 died") != std::string::npos);
  }
  CAF_CHECK(finished_event("later")->error.find("the engine stopped serving") != std::string::npos);
  const EngineMetrics m = metrics();
  CAF_CHECK_EQUAL(m.num_worker_restarts, 4);
  CAF_CHECK_EQUAL(m.num_free_blocks, m.num_blocks);
}

CAF_TEST(a scheduler that stops ends the streams of its requests and stops its workers) {
  const worker_actor worker = worker_hdl();
  self->monitor(worker);
  TokenStream stream(sys, scheduler_hdl, "r", 1);
  self->send(scheduler_hdl, submit_atom_v,
             Submission{make_request("r", {1, 2, 3}, 20), stream.sink()});
  run_once();  // the submission: a step is planned
  self->send_exit(scheduler_hdl, caf::exit_reason::kill);
  run();
  std::optional<TokenEvent> last;
  while (std::optional<TokenEvent> event = stream.next()) last = std::move(event);
  CAF_REQUIRE(last.has_value());
  CAF_CHECK(last->finished);
  CAF_CHECK(last->error.find("the engine's scheduler stopped") != std::string::npos);
  bool worker_stopped = false;
  self->receive([&](caf::down_msg& down) { worker_stopped = down.source == worker.address(); },
                caf::after(std::chrono::seconds(0)) >> [] {});
  CAF_CHECK(worker_stopped);
}

CAF_TEST_FIXTURE_SCOPE_END()

namespace {

// Two data-parallel ranks of a dense model (no collectives), whose workers
// the test runs by hand (not detached).
struct TwoRankFixture : test_coordinator_fixture<ActorConfig> {
  CpuBackend cpu;
  std::shared_ptr<Model> model =
      std::make_shared<Model>(std::string(HIVE_TEST_DATA) + "/models/llama", cpu);
  token_sink sink = sys.spawn<Collector>();
  scheduler_actor scheduler_hdl;

  TwoRankFixture() {
    SchedulerSetup setup = make_scheduler_setup(model, small_engine_config(), 2);
    setup.detached_workers = false;
    scheduler_hdl = sys.spawn(scheduler, std::move(setup));
    run();
  }
  SchedulerState& scheduler_state() {
    return deref<scheduler_actor::stateful_base<SchedulerState>>(scheduler_hdl).state;
  }
};

}  // namespace

CAF_TEST_FIXTURE_SCOPE(two_rank_fault_tests, TwoRankFixture)

CAF_TEST(a step that two ranks leave unanswered fails the requests of both) {
  // Steps 1 and 2 (sent together) compute "a" on rank 0; step 3, planned
  // when step 1 came back, both "a" and "b" (rank 1).
  for (const char* id : {"a", "b"}) {
    self->send(scheduler_hdl, submit_atom_v, Submission{make_request(id, {1, 2, 3}, 4), sink});
    expect((submit_atom, Submission), from(self).to(scheduler_hdl).with(_, _));
  }
  run_until([&] {
    const auto& in_flight = scheduler_state().in_flight;
    return !in_flight.empty() && in_flight.front().id == 3;
  });
  // Neither worker has answered step 3: which one held it up is not known.
  CAF_CHECK_EQUAL(trigger_timeouts(), 1u);
  CAF_REQUIRE(sched.prioritize(scheduler_hdl));
  sched.run_once();
  CAF_REQUIRE(sched.prioritize(scheduler_hdl));
  sched.run_once();
  run();
  const auto& events = deref<token_sink::stateful_base<CollectorState>>(sink).state.events;
  for (const std::string id : {"a", "b"}) {
    const auto done = std::find_if(events.begin(), events.end(), [&](const TokenEvent& e) {
      return e.request_id == id && e.finished;
    });
    CAF_REQUIRE(done != events.end());
    CAF_CHECK_EQUAL(done->error, "worker ranks 0, 1 timed out in step 3");
  }
}

CAF_TEST_FIXTURE_SCOPE_END()

namespace {

// Workers that cannot be replaced (ranks in other processes): the setup's
// end_job, here recorded instead of ending the process.
struct EndJobFixture : test_coordinator_fixture<ActorConfig> {
  CpuBackend cpu;
  std::shared_ptr<Model> model =
      std::make_shared<Model>(std::string(HIVE_TEST_DATA) + "/models/qwen3_moe", cpu);
  token_sink sink = sys.spawn<Collector>();
  scheduler_actor scheduler_hdl;
  std::vector<std::string> ended;  // end_job's causes

  EndJobFixture() {
    SchedulerSetup setup = make_scheduler_setup(model, small_engine_config(), 1);
    setup.end_job = [this](const std::string& cause) { ended.push_back(cause); };
    setup.end_job_grace = std::chrono::milliseconds(2000);
    scheduler_hdl = sys.spawn(scheduler, std::move(setup));
    run();
  }
  SchedulerState& scheduler_state() {
    return deref<scheduler_actor::stateful_base<SchedulerState>>(scheduler_hdl).state;
  }
  EngineMetrics metrics() { return request<EngineMetrics>(scheduler_hdl, metrics_atom_v); }
  void submit(Request request) {
    self->send(scheduler_hdl, submit_atom_v, Submission{std::move(request), sink});
  }
  const std::vector<TokenEvent>& events() {
    return deref<token_sink::stateful_base<CollectorState>>(sink).state.events;
  }
  const TokenEvent* finished_event(const std::string& id) {
    for (const TokenEvent& e : events())
      if (e.request_id == id && e.finished) return &e;
    return nullptr;
  }
};

}  // namespace

CAF_TEST_FIXTURE_SCOPE(end_job_tests, EndJobFixture)

CAF_TEST(a worker that cannot be replaced fails every request and then ends the job) {
  submit(make_request("running", {3, 1, 4, 1, 5}, 40));
  submit(make_request("second", {2, 7, 1, 8}, 40));
  run_until([&] {
    return std::count_if(events().begin(), events().end(),
                         [](const TokenEvent& e) { return e.request_id == "running"; }) >= 2;
  });
  const worker_actor worker = scheduler_state().workers.at(0);
  self->send_exit(worker, caf::exit_reason::kill);  // as its process's end looks from here
  // Messages only: run() would also fire the grace's timer.
  run_until([&] { return finished_event("running") && finished_event("second"); });
  for (const std::string id : {"running", "second"}) {
    const TokenEvent* failed = finished_event(id);
    CAF_REQUIRE(failed != nullptr);
    CAF_CHECK(failed->error.find("worker rank 0 died") != std::string::npos);
    CAF_CHECK(failed->error.find("the job ends (a rank's process is not restarted)") !=
              std::string::npos);
  }
  const std::string cause = scheduler_state().core->stopped_serving();
  CAF_CHECK(cause.find("worker rank 0 died") != std::string::npos);
  CAF_CHECK_EQUAL(scheduler_state().metrics.num_worker_restarts, 0);
  CAF_CHECK(ended.empty());  // not before the grace: the streams carry their errors first
  submit(make_request("later", {5, 6}, 3));
  run_until([&] { return finished_event("later") != nullptr; });
  CAF_CHECK(finished_event("later")->error.find("the engine stopped serving: worker rank 0 died") !=
            std::string::npos);
  CAF_CHECK(ended.empty());
  run();  // the grace runs out
  CAF_REQUIRE_EQUAL(ended.size(), 1u);
  CAF_CHECK_EQUAL(ended[0], cause);
  const EngineMetrics m = metrics();
  CAF_CHECK_EQUAL(m.stopped_serving, cause);
  CAF_CHECK_EQUAL(m.num_worker_restarts, 0);
  CAF_CHECK_EQUAL(m.num_failed_requests, 2);  // "later" was refused, never taken in
}

CAF_TEST_FIXTURE_SCOPE_END()
