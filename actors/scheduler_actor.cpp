#include "actors/scheduler_actor.hpp"

#include <algorithm>
#include <span>

#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/sec.hpp>

#include "actors/error_text.hpp"
#include "kernels/error.hpp"

namespace hive {

namespace {

using Self = scheduler_actor::stateful_pointer<SchedulerState>;

void maybe_step(Self self);

void build_core(SchedulerState& st) {
  st.ranks = std::vector<RankCore>(st.setup.workers.size() /
                                   static_cast<size_t>(st.setup.tensor_parallel_size));
  for (RankCore& core : st.ranks) {
    core.kv_cache = std::make_unique<KVCacheManager>(st.setup.kv_cache);
    core.scheduler = std::make_unique<Scheduler>(st.setup.scheduler, *core.kv_cache);
  }
}

void spawn_workers(Self self) {
  SchedulerState& st = self->state;
  st.workers.clear();
  st.num_ready = 0;
  self->delayed_send(self, st.setup.worker_start_timeout, start_due_atom_v, ++st.generation);
  st.replicas_sent = false;  // fresh workers hold no replicas yet
  // A fresh group per worker generation: a failed generation aborted its own.
  const bool collectives = st.setup.num_experts > 0 || st.setup.tensor_parallel_size > 1;
  st.group = collectives
                 ? std::make_shared<InProcessGroup>(static_cast<int>(st.setup.workers.size()))
                 : nullptr;
  for (WorkerSpec spec : st.setup.workers) {
    spec.group = st.group;
    spec.placement = st.setup.placement;
    spec.scheduler = self->address();
    worker_actor w = st.setup.detached_workers ? self->spawn<caf::detached>(worker, spec)
                                               : self->spawn(worker, spec);
    self->monitor(w);
    st.workers.push_back(std::move(w));
  }
}

void stop_workers(Self self, caf::exit_reason reason) {
  // Ranks still waiting in a collective (their peer failed) must be released
  // before they can see the exit.
  if (self->state.group) self->state.group->abort();
  for (const worker_actor& w : self->state.workers) {
    self->demonitor(w.address());
    self->send_exit(w, reason);
  }
  self->state.workers.clear();
}

void send_event(Self self, const token_sink& sink, TokenEvent event) {
  if (sink) self->send(sink, std::move(event));
}

void fail_event(Self self, const token_sink& sink, const std::string& id, std::string error) {
  // Sample index -1: the event ends the whole request.
  send_event(self, sink, TokenEvent::finish(id, -1, {}, FinishReason::aborted, std::move(error)));
}

// Hands finished samples to their owners; `error` marks them failed.
void deliver(Self self, std::vector<SequenceOutput>& outputs, const std::string& error) {
  SchedulerState& st = self->state;
  for (SequenceOutput& out : outputs) {
    const auto it = st.requests.find(out.request_id);
    if (it == st.requests.end()) continue;
    const std::string why =
        !out.error.empty() ? out.error : (it->second.cancelled ? std::string() : error);
    TokenEvent event = TokenEvent::finish(out.request_id, out.sample_index,
                                          std::move(out.token_ids), out.finish_reason, why);
    event.logits = std::move(out.logits);
    event.logprobs = std::move(out.logprobs);
    send_event(self, it->second.sink, std::move(event));
    it->second.failed |= !why.empty();
    if (--it->second.samples_left > 0) continue;
    --st.ranks[static_cast<size_t>(it->second.rank)].num_requests;
    ++(it->second.failed ? st.metrics.num_failed_requests : st.metrics.num_finished_requests);
    st.requests.erase(it);
  }
}

// Aborts the given requests and delivers them as failed with `error`.
void fail_requests(Self self, const std::vector<std::string>& ids, const std::string& error) {
  SchedulerState& st = self->state;
  for (const std::string& id : ids)
    if (const auto it = st.requests.find(id); it != st.requests.end())
      st.ranks[static_cast<size_t>(it->second.rank)].scheduler->abort_request(id);
  for (RankCore& core : st.ranks) {
    std::vector<SequenceOutput> outputs = core.scheduler->take_aborted();
    deliver(self, outputs, error);
  }
}

bool has_unfinished(const SchedulerState& st) {
  return std::any_of(st.ranks.begin(), st.ranks.end(),
                     [](const RankCore& core) { return core.scheduler->has_unfinished(); });
}

void check_drained(Self self) {
  SchedulerState& st = self->state;
  if (!st.shutting_down || !st.requests.empty() || !st.in_flight.empty()) return;
  stop_workers(self, caf::exit_reason::user_shutdown);
  for (auto& promise : st.shutdown_promises) promise.deliver(st.num_failed_at_shutdown);
  st.shutdown_promises.clear();
  self->quit();
}

// The step ran (its workers answered, or one failed in it or overran it):
// the requests in its plans have run on their rank. A step that never ran
// (a worker killed or unable to start before taking it up, a step queued
// behind the one that failed) marks nothing: its requests cannot have
// caused the fault.
void mark_started(SchedulerState& st, const InFlightStep& step) {
  for (const auto& rank_requests : step.requests)
    for (const std::shared_ptr<const Request>& request : rank_requests)
      if (const auto it = st.requests.find(request->id); it != st.requests.end())
        it->second.started = true;
}

InFlightStep* find_in_flight(SchedulerState& st, int64_t step_id) {
  for (InFlightStep& step : st.in_flight)
    if (step.id == step_id) return &step;
  return nullptr;
}

// Worker `failed_worker` (-1: not known) failed, died or timed out. The
// requests that ever ran on its planning rank fail: they may be what made
// it fail. Every worker is replaced (the ranks of one group meet in
// collectives), so every KV cache is lost; the other ranks' requests are
// computed again from their tokens on the fresh workers and continue where
// they were (recompute_all). Workers that keep failing before a single step
// completes (a shard that no longer loads, a device that is gone) are not
// restarted for ever: after kMaxConsecutiveFaults every request fails and
// the engine stops serving, saying why.
constexpr int kMaxConsecutiveFaults = 3;

void handle_fault(Self self, const std::string& cause, int failed_worker) {
  SchedulerState& st = self->state;
  stop_workers(self, caf::exit_reason::kill);
  if (++st.consecutive_faults >= kMaxConsecutiveFaults) {
    st.stopped_serving = str_cat("the workers failed ", st.consecutive_faults,
                                 " times in a row without completing a step; the last: ", cause);
    std::vector<std::string> all;
    for (const auto& [id, tracked] : st.requests) all.push_back(id);
    fail_requests(self, all, st.stopped_serving);
    st.in_flight.clear();  // late replies find no step and are ignored
    return check_drained(self);
  }
  const int failed_rank = failed_worker < 0 ? -1 : failed_worker / st.setup.tensor_parallel_size;
  std::vector<std::string> started;
  for (const auto& [id, tracked] : st.requests)
    if (tracked.started && (failed_rank < 0 || tracked.rank == failed_rank)) started.push_back(id);
  fail_requests(self, started, cause);
  ++st.metrics.num_worker_restarts;
  for (RankCore& core : st.ranks) {
    core.scheduler->recompute_all();
    core.encoder.reset();
  }
  st.in_flight.clear();  // late replies find no step and are ignored
  spawn_workers(self);
  maybe_step(self);
}

// The step's new tokens as events for their requests' sinks.
void collect_sampled(SchedulerState& st, const RankCore& core,
                     std::span<const SampledToken> sampled,
                     std::vector<std::pair<token_sink, TokenEvent>>& events) {
  for (const SampledToken& token : sampled) {
    // Cancelled while the step ran, or stopped in the step before. (One
    // preempted since, by the plan made while this step ran, still counts.)
    if (!core.scheduler->has_sequence(token.seq_id)) continue;
    if (!token.error.empty()) continue;  // it failed: its finished event says why
    const Sequence& seq = core.scheduler->sequence(token.seq_id);
    const auto it = st.requests.find(seq.request->id);
    if (it == st.requests.end()) continue;
    TokenEvent event = TokenEvent::token(seq.request->id, seq.sample_index, token.token);
    if (token.logprobs) event.logprobs.push_back(*token.logprobs);
    events.emplace_back(it->second.sink, std::move(event));
    ++st.metrics.num_generated_tokens;
  }
}

// The oldest step in flight has all its replies.
void finish_step(Self self) {
  SchedulerState& st = self->state;
  const InFlightStep step = std::move(st.in_flight.front());
  st.in_flight.pop_front();
  const auto now = std::chrono::steady_clock::now();
  st.metrics.step_seconds += std::chrono::duration<double>(now - step.start).count();
  ++st.metrics.num_steps;
  if (!st.in_flight.empty()) {
    // The next step is the workers' from now on, and so is its deadline.
    st.in_flight.front().start = now;
    st.step_deadline = self->clock().now() + st.setup.worker_timeout;
  }
  // The load goes out before any token: whoever sees a request finish and
  // then asks the expert actor for metrics finds this step counted.
  if (st.setup.expert && !step.load.empty())
    self->send(st.setup.expert, load_atom_v, step.load, step.remote);
  std::vector<std::pair<token_sink, TokenEvent>> events;
  std::vector<SequenceOutput> outputs;
  mark_started(st, step);
  for (size_t rank = 0; rank < st.ranks.size(); ++rank) {
    RankCore& core = st.ranks[rank];
    collect_sampled(st, core, step.sampled[rank], events);
    for (SequenceOutput& out : core.scheduler->update(step.sampled[rank]))
      outputs.push_back(std::move(out));
  }
  st.consecutive_faults = 0;
  // The next plan goes out before the tokens of this one: the workers
  // compute while the events are sent.
  maybe_step(self);
  for (auto& [sink, event] : events) send_event(self, sink, std::move(event));
  deliver(self, outputs, "");
  check_drained(self);
}

void on_reply(Self self, WorkerResult& result) {
  SchedulerState& st = self->state;
  InFlightStep* step = find_in_flight(st, result.step_id);
  if (!step) return;  // of steps voided by a fault
  step->replied.at(static_cast<size_t>(result.rank)) = true;
  // Tensor-parallel workers all sample the same tokens; the first one's count.
  const int tp = st.setup.tensor_parallel_size;
  if (result.rank % tp == 0)
    step->sampled.at(static_cast<size_t>(result.rank / tp)) = std::move(result.sampled);
  if (result.rank == 0) st.metrics.compute_seconds += result.compute_seconds;
  for (auto [sum, delta] : {std::pair{&step->load, &result.expert_load},
                            std::pair{&step->remote, &result.expert_remote}}) {
    if (sum->empty()) sum->resize(delta->size(), 0);
    check(sum->size() == delta->size(), "worker rank ", result.rank, " reported expert counts for ",
          delta->size(), " (layer, expert) pairs, expected ", sum->size());
    for (size_t i = 0; i < delta->size(); ++i) (*sum)[i] += (*delta)[i];
  }
  if (--step->replies_pending > 0) return;
  // Every worker runs its steps in order: the oldest completes first.
  check(step == &st.in_flight.front(), "step ", result.step_id, " completed before step ",
        st.in_flight.front().id);
  finish_step(self);
}

void on_worker_error(Self self, int64_t step_id, int worker, const caf::error& err) {
  SchedulerState& st = self->state;
  if (!find_in_flight(st, step_id)) return;
  // The step reached a worker that had already stopped: its down message,
  // which carries why it stopped, follows and handles the fault.
  if (err == caf::sec::request_receiver_down) return;
  // A failing worker answers before it aborts its group, so the first error
  // of a step is the failing rank's, not a released peer's. The steps up to
  // this one ran; a later one never started.
  for (const InFlightStep& step : st.in_flight)
    if (step.id <= step_id) mark_started(st, step);
  handle_fault(self, error_text(err), worker);
}

void arm_watchdog(Self self, caf::actor_clock::duration_type delay) {
  self->state.watchdog_armed = true;
  self->delayed_send(self, delay, watchdog_atom_v);
}

// Steps in flight are always watched: the timer is armed for the oldest
// one's deadline unless it already is.
void watch_steps(Self self) {
  SchedulerState& st = self->state;
  if (st.in_flight.empty() || st.watchdog_armed) return;
  const auto now = self->clock().now();
  arm_watchdog(
      self, st.step_deadline > now ? st.step_deadline - now : caf::actor_clock::duration_type{0});
}

// The step deadline timer fired. A step still within its deadline re-arms
// it; one past it is checked once more behind the messages already queued,
// since its replies may be among them (a worker on the scheduler's thread,
// as a single-rank engine's is without async scheduling, queues the reply
// of a step that overran after the timer that fired meanwhile).
void on_watchdog(Self self) {
  SchedulerState& st = self->state;
  st.watchdog_armed = false;
  if (st.in_flight.empty()) return;
  const auto now = self->clock().now();
  if (now < st.step_deadline) return arm_watchdog(self, st.step_deadline - now);
  self->send(self, watchdog_atom_v, st.in_flight.front().id);
}

// Step `step_id` is past its deadline with every queued reply read: a fault
// of the one worker that has not answered. When several have not, which one
// held up the others (ranks wait for each other in collectives) is unknown,
// and so the requests of every rank fail.
void on_overdue(Self self, int64_t step_id) {
  SchedulerState& st = self->state;
  // Answered meanwhile (its reply was queued): the next step is watched.
  if (st.in_flight.empty() || st.in_flight.front().id != step_id) return watch_steps(self);
  const InFlightStep& step = st.in_flight.front();
  mark_started(st, step);
  std::vector<size_t> silent;
  for (size_t w = 0; w < step.replied.size(); ++w)
    if (!step.replied[w]) silent.push_back(w);
  if (silent.size() == 1)
    return handle_fault(self, str_cat("worker rank ", silent[0], " timed out in step ", step_id),
                        static_cast<int>(silent[0]));
  std::string ranks;
  for (const size_t w : silent) ranks += str_cat(ranks.empty() ? "" : ", ", w);
  handle_fault(self, str_cat("worker ranks ", ranks, " timed out in step ", step_id), -1);
}

// Plans a step on every rank and sends it. A step behind one in flight that
// would run nothing on any rank (every sequence waits for the step before)
// is not sent (its finished sequences go with the next); returns whether
// one was.
bool send_step(Self self) {
  SchedulerState& st = self->state;
  std::vector<StepPlan> plans;
  for (RankCore& core : st.ranks) plans.push_back(core.scheduler->schedule());
  if (!st.in_flight.empty() &&
      std::all_of(plans.begin(), plans.end(), [](const StepPlan& p) { return p.runs_nothing(); })) {
    for (size_t rank = 0; rank < st.ranks.size(); ++rank)
      st.ranks[rank].scheduler->drop_empty_plan(std::move(plans[rank]));
    return false;
  }
  InFlightStep& step = st.in_flight.emplace_back();
  const int64_t step_id = step.id = ++st.step_id;
  step.replies_pending = static_cast<int>(st.workers.size());
  step.replied.assign(st.workers.size(), false);
  step.sampled.resize(st.ranks.size());
  step.requests.resize(st.ranks.size());
  if (st.in_flight.size() == 1) {
    step.start = std::chrono::steady_clock::now();
    st.step_deadline = self->clock().now() + st.setup.worker_timeout;
  }
  watch_steps(self);
  // Every rank steps, planned or idle: they meet in the MoE collectives. A
  // tensor-parallel group's workers all get their rank's plan.
  const auto tp = static_cast<size_t>(st.setup.tensor_parallel_size);
  for (size_t rank = 0; rank < st.ranks.size(); ++rank) {
    RankCore& core = st.ranks[rank];
    for (const ScheduledSequence& s : plans[rank].sequences)
      step.requests[rank].push_back(core.scheduler->sequence(s.seq_id).request);
    WorkerStep message = core.encoder.encode(plans[rank], step_id);
    if (!st.replicas_sent) message.replicated_experts = st.replicated_experts;
    for (size_t w = rank * tp; w < (rank + 1) * tp; ++w)
      self->request(st.workers[w], caf::infinite, step_atom_v,
                    w + 1 == (rank + 1) * tp ? std::move(message) : message)
          .then([self](WorkerResult& result) { on_reply(self, result); },
                [self, step_id, w](caf::error& err) {
                  on_worker_error(self, step_id, static_cast<int>(w), err);
                });
  }
  st.replicas_sent = true;  // like the rest of a step, a diff: sent once
  return true;
}

void maybe_step(Self self) {
  SchedulerState& st = self->state;
  const auto depth = static_cast<size_t>(st.setup.max_steps_in_flight);
  // No step goes out before every worker has started: loading a shard or
  // allocating a large KV cache can take longer than a step's deadline.
  const bool started = !st.workers.empty() && st.num_ready == st.workers.size();
  while (started && st.in_flight.size() < depth && has_unfinished(st) && send_step(self)) {
  }
  check_drained(self);
}

void submit(Self self, Submission& submission) {
  SchedulerState& st = self->state;
  const std::string id = submission.request.id;
  if (st.shutting_down) return fail_event(self, submission.sink, id, "the engine is shutting down");
  if (!st.stopped_serving.empty())
    return fail_event(self, submission.sink, id,
                      str_cat("the engine stopped serving: ", st.stopped_serving));
  try {
    for (const int32_t token : submission.request.prompt_token_ids)
      check(token >= 0 && token < st.setup.vocab_size, "request ", id, ": prompt token id ", token,
            " is out of range [0, ", st.setup.vocab_size, ")");
    check(!st.requests.count(id), "request id '", id, "' is already in use");
  } catch (const Error& e) {
    return fail_event(self, submission.sink, id, e.what());
  }
  // Data parallel: the rank with the fewest unfinished requests (lowest on ties).
  const auto least = std::min_element(
      st.ranks.begin(), st.ranks.end(),
      [](const RankCore& a, const RankCore& b) { return a.num_requests < b.num_requests; });
  try {
    least->scheduler->add_request(submission.request);
  } catch (const Error& e) {
    return fail_event(self, submission.sink, id, e.what());
  }
  ++least->num_requests;
  st.requests.emplace(id, TrackedRequest{std::move(submission.sink), submission.request.n, false,
                                         static_cast<int>(least - st.ranks.begin())});
  maybe_step(self);
}

// Aborts request `id`; with a sink, only if the request reports to it.
void cancel(Self self, const std::string& id, const token_sink* sink) {
  const auto it = self->state.requests.find(id);
  if (it == self->state.requests.end() || (sink && it->second.sink != *sink)) return;
  it->second.cancelled = true;
  self->state.ranks[static_cast<size_t>(it->second.rank)].scheduler->abort_request(id);
  // Mid-step, the abort comes back from the step's update(); else now.
  if (self->state.in_flight.empty()) fail_requests(self, {}, "");
}

// Ends sample `sample_index` of request `id` at a stop string.
void stop_sample(Self self, const std::string& id, int32_t sample_index) {
  const auto it = self->state.requests.find(id);
  if (it == self->state.requests.end()) return;
  self->state.ranks[static_cast<size_t>(it->second.rank)].scheduler->abort_request(
      id, FinishReason::stop_string, sample_index);
  if (self->state.in_flight.empty()) fail_requests(self, {}, "");
}

EngineMetrics snapshot(const SchedulerState& st) {
  EngineMetrics m = st.metrics;
  m.world_size = static_cast<int>(st.setup.workers.size());
  m.ready = !st.workers.empty() && st.num_ready == st.workers.size();
  for (const RankCore& core : st.ranks) {
    m.num_running += static_cast<int64_t>(core.scheduler->num_running());
    m.num_waiting += static_cast<int64_t>(core.scheduler->num_waiting());
    m.num_free_blocks += core.kv_cache->device_pool().num_free_blocks();
    m.num_blocks += core.kv_cache->device_pool().num_allocatable_blocks();
    m.prefix_hit_tokens += core.kv_cache->stats().prefix_hit_tokens;
    m.prefix_queried_tokens += core.kv_cache->stats().prefix_queried_tokens;
    m.num_preemptions += core.scheduler->stats().num_preemptions_recompute +
                         core.scheduler->stats().num_preemptions_swap;
  }
  m.replicated_experts = st.replicated_experts;
  return m;
}

}  // namespace

scheduler_actor::behavior_type scheduler(Self self, SchedulerSetup setup) {
  self->state.setup = std::move(setup);
  self->state.metrics.num_experts = self->state.setup.num_experts;
  build_core(self->state);
  spawn_workers(self);
  self->set_down_handler([self](caf::down_msg& down) {
    const std::vector<worker_actor>& workers = self->state.workers;
    for (size_t rank = 0; rank < workers.size(); ++rank)
      if (workers[rank].address() == down.source)
        return handle_fault(self, str_cat("worker rank ", rank, " died: ", error_text(down.reason)),
                            static_cast<int>(rank));
  });
  // Should this actor fail, its workers go with it (a detached one would
  // otherwise keep the actor system alive); streams and callbacks monitor
  // it and end their requests with the error.
  self->set_exception_handler([self](std::exception_ptr& eptr) -> caf::error {
    stop_workers(self, caf::exit_reason::kill);
    try {
      std::rethrow_exception(eptr);
    } catch (const std::exception& e) {
      return caf::make_error(caf::sec::runtime_error, str_cat("scheduler: ", e.what()));
    } catch (...) {
      return caf::make_error(caf::sec::runtime_error, "scheduler: an unknown exception");
    }
  });
  return {
      [self](submit_atom, Submission& submission) { submit(self, submission); },
      [self](cancel_atom, const std::string& id) { cancel(self, id, nullptr); },
      [self](cancel_atom, const std::string& id, const token_sink& sink) {
        cancel(self, id, &sink);
      },
      [self](cancel_atom, const std::string& id, int32_t sample_index) {
        stop_sample(self, id, sample_index);
      },
      [self](metrics_atom) { return snapshot(self->state); },
      [self](replicas_atom, std::vector<int32_t>& replicated) {
        self->state.replicated_experts = std::move(replicated);
        self->state.replicas_sent = false;
      },
      [self](ready_atom, const caf::actor_addr& worker) {
        // Only the current generation counts: a replaced worker's word is stale.
        for (const worker_actor& w : self->state.workers)
          if (w.address() == worker) {
            ++self->state.num_ready;
            return maybe_step(self);
          }
      },
      [self](start_due_atom, int64_t generation) {
        SchedulerState& st = self->state;
        if (generation != st.generation || st.num_ready == st.workers.size()) return;
        handle_fault(
            self,
            str_cat(st.workers.size() - st.num_ready, " of ", st.workers.size(),
                    " workers did not start within ", st.setup.worker_start_timeout.count(), " ms"),
            -1);
      },
      [self](watchdog_atom) { on_watchdog(self); },
      [self](watchdog_atom, int64_t step_id) { on_overdue(self, step_id); },
      [self](fault_atom, int rank) {
        auto& workers = self->state.workers;
        if (rank >= 0 && rank < static_cast<int>(workers.size()))
          self->send(workers[static_cast<size_t>(rank)], fault_atom_v);
      },
      [self](shutdown_atom, bool drain) -> caf::result<int64_t> {
        SchedulerState& st = self->state;
        st.shutting_down = true;
        auto promise = self->make_response_promise<int64_t>();
        st.shutdown_promises.push_back(promise);
        if (!drain) {
          std::vector<std::string> ids;
          for (const auto& [id, tracked] : st.requests) {
            ids.push_back(id);
            if (!tracked.cancelled) ++st.num_failed_at_shutdown;  // a cancelled one ends as such
          }
          fail_requests(self, ids, "the engine shut down with the request in flight");
        }
        check_drained(self);
        return promise;
      },
  };
}

}  // namespace hive
