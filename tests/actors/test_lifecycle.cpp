// Cancel mid-stream and shutdown with requests in flight, deterministically.
#define CAF_SUITE lifecycle
#include "tests/actors/actor_fixture.hpp"

using namespace hive;
using namespace hive::test;

CAF_TEST_FIXTURE_SCOPE(lifecycle_tests, ActorFixture)

CAF_TEST(cancel mid - stream ends that request only and frees its blocks) {
  const Request slow = make_request("slow", {3, 1, 4, 1, 5}, 30);
  const Request other = make_request("other", {2, 7, 1, 8}, 8);
  submit(slow);
  submit(other);
  run_until([&] { return streamed("slow").size() >= 3; });
  self->send(scheduler_hdl, cancel_atom_v, std::string("slow"));
  run();
  const TokenEvent* done = finished_event("slow");
  CAF_REQUIRE(done != nullptr);
  CAF_CHECK(done->reason() == FinishReason::aborted);
  CAF_CHECK(done->error.empty());
  CAF_CHECK_LESS(done->token_ids.size(), 30u);
  CAF_CHECK(is_prefix(streamed("slow"), reference(slow)));
  CAF_CHECK_EQUAL(streamed("other"), reference(other));
  const EngineMetrics m = metrics();
  CAF_CHECK_EQUAL(m.num_finished_requests, 2);
  CAF_CHECK_EQUAL(m.num_free_blocks, m.num_blocks);
}

CAF_TEST(cancel of a finished or unknown request is ignored) {
  const Request r = make_request("r", {9, 9, 9}, 3);
  submit(r);
  run();
  self->send(scheduler_hdl, cancel_atom_v, std::string("r"));
  self->send(scheduler_hdl, cancel_atom_v, std::string("nobody"));
  run();
  size_t finished = 0;
  for (const TokenEvent& e : events()) finished += e.finished ? 1 : 0;
  CAF_CHECK_EQUAL(finished, 1u);
  CAF_CHECK_EQUAL(streamed("r"), reference(r));
}

CAF_TEST(shutdown that fails in - flight requests names the reason) {
  const Request a = make_request("a", {1, 2, 3}, 20);
  const Request b = make_request("b", {4, 5, 6, 7}, 20);
  submit(a);
  submit(b);
  run_until([&] { return streamed("a").size() >= 2; });
  const auto failed = request<int64_t>(scheduler_hdl, shutdown_atom_v, false);
  CAF_CHECK_EQUAL(failed, 2);
  for (const char* id : {"a", "b"}) {
    const TokenEvent* done = finished_event(id);
    CAF_REQUIRE(done != nullptr);
    CAF_CHECK_EQUAL(done->error, "the engine shut down with the request in flight");
  }
  CAF_CHECK(is_prefix(streamed("a"), reference(a)));
  CAF_CHECK_LESS(streamed("a").size(), 20u);
  bool answered = false;
  self->request(scheduler_hdl, caf::infinite, metrics_atom_v)
      .receive([&](EngineMetrics&) { answered = true; }, [&](caf::error&) {});
  CAF_CHECK(!answered);  // the scheduler has quit
}

CAF_TEST(draining shutdown finishes in - flight requests and refuses new ones) {
  const Request a = make_request("a", {1, 2, 3}, 6);
  submit(a);
  run_until([&] { return streamed("a").size() >= 1; });
  auto pending = self->request(scheduler_hdl, caf::infinite, shutdown_atom_v, true);
  submit(make_request("late", {1, 2}, 2));
  run();
  int64_t failed = -1;
  pending.receive([&](int64_t n) { failed = n; },
                  [&](caf::error& err) { CAF_FAIL(to_string(err)); });
  CAF_CHECK_EQUAL(failed, 0);
  CAF_CHECK_EQUAL(streamed("a"), reference(a));
  const TokenEvent* late = finished_event("late");
  CAF_REQUIRE(late != nullptr);
  CAF_CHECK_EQUAL(late->error, "the engine is shutting down");
}

CAF_TEST_FIXTURE_SCOPE_END()
