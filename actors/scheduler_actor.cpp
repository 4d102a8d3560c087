#include "actors/scheduler_actor.hpp"

#include <algorithm>
#include <span>

#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/sec.hpp>

#include "actors/error_text.hpp"
#include "actors/scheduler_actor_drafts.hpp"
#include "base/error.hpp"

namespace hive {

namespace {

using scheduler_detail::drafts_ready;
using scheduler_detail::maybe_step;
using scheduler_detail::propose_ahead;
using scheduler_detail::Self;

void build_core(SchedulerState& st) {
  EngineCoreConfig config = st.setup.core;
  // The workers say how many planning ranks there are (a fixture may start
  // fewer than the setup was derived for).
  config.num_ranks = static_cast<int>(st.setup.workers.size()) / st.setup.tensor_parallel_size;
  st.core = std::make_unique<EngineCore>(config);
}

void spawn_workers(Self self) {
  SchedulerState& st = self->state;
  st.workers.clear();
  st.num_ready = 0;
  self->delayed_send(self, st.setup.core.scheduler.worker_start_timeout, start_due_atom_v,
                     ++st.generation);
  st.replicas_sent = false;  // fresh workers hold no replicas yet
  // A fresh group per worker generation: a failed generation aborted its own.
  const bool collectives = st.setup.num_experts > 0 || st.setup.tensor_parallel_size > 1;
  st.group = collectives ? st.setup.make_group(static_cast<int>(st.setup.workers.size())) : nullptr;
  for (WorkerSpec spec : st.setup.workers) {
    spec.group = st.group;
    spec.placement = st.setup.placement;
    spec.scheduler = self->address();
    worker_actor w = st.setup.spawn_worker       ? st.setup.spawn_worker(spec)
                     : st.setup.detached_workers ? self->spawn<caf::detached>(worker, spec)
                                                 : self->spawn(worker, spec);
    self->monitor(w);
    st.workers.push_back(std::move(w));
  }
}

void stop_workers(Self self, caf::exit_reason reason) {
  // Ranks still waiting in a collective (their peer failed) must be released
  // before they can see the exit. Only a step runs collectives: with none in
  // flight no rank waits, and a group of processes is not ended (its abort
  // ends the job).
  if (self->state.group && !self->state.in_flight.empty()) self->state.group->abort();
  for (const worker_actor& w : self->state.workers) {
    self->demonitor(w.address());
    self->send_exit(w, reason);
  }
  self->state.workers.clear();
}

void fail_event(Self self, const token_sink& sink, const std::string& id, std::string error) {
  // Sample index -1: the event ends the whole request.
  if (!sink) return;
  ++self->state.metrics.num_output_messages;
  self->send(
      sink, OutputBatch{{TokenEvent::finish(id, -1, {}, FinishReason::aborted, std::move(error))}});
}

// The events of one call of the core, gathered per consumer: one message
// each, however many requests and tokens it holds, because a message per
// token and request cost a mailbox round and a wake-up each.
class Outbox {
 public:
  TokenEvent& event_for(const token_sink& sink) { return batch(sink).events.emplace_back(); }
  // The open token event of (request, sample) if it is this consumer's
  // latest: a step's drafts and its sampled token travel as one delta.
  TokenEvent* open_tokens(const token_sink& sink, const std::string& id, int sample_index) {
    std::vector<TokenEvent>& events = batch(sink).events;
    if (events.empty()) return nullptr;
    TokenEvent& last = events.back();
    return !last.finished && last.sample_index == sample_index && last.request_id == id ? &last
                                                                                        : nullptr;
  }
  // Returns the number of messages sent.
  int64_t send(Self self, int64_t step_id) {
    for (auto& [sink, batch] : batches_) {
      batch.step_id = step_id;
      self->send(sink, std::move(batch));
    }
    return static_cast<int64_t>(batches_.size());
  }

 private:
  OutputBatch& batch(const token_sink& sink) {
    // Few consumers per step (a gateway has one); a linear search is cheapest.
    for (auto& [s, b] : batches_)
      if (s == sink) return b;
    return batches_.emplace_back(sink, OutputBatch{}).second;
  }
  std::vector<std::pair<token_sink, OutputBatch>> batches_;
};

// Streams the tokens, then hands the finished samples to their owners, one
// message per consumer; returns the number sent.
int64_t send_events(Self self, CoreEvents& events, int64_t step_id = 0) {
  SchedulerState& st = self->state;
  Outbox outbox;
  for (NewToken& token : events.tokens) {
    const auto it = st.sinks.find(token.request_id);
    if (it == st.sinks.end() || !it->second) continue;
    TokenEvent* event = outbox.open_tokens(it->second, token.request_id, token.sample_index);
    if (!event) {
      event = &outbox.event_for(it->second);
      event->request_id = token.request_id;
      event->sample_index = token.sample_index;
    }
    event->token_ids.push_back(token.token);
    if (token.logprobs) event->logprobs.push_back(std::move(*token.logprobs));
  }
  for (FinishedSample& done : events.finished) {
    SequenceOutput& out = done.output;
    const auto it = st.sinks.find(out.request_id);
    if (it == st.sinks.end()) continue;
    if (it->second) {
      TokenEvent& event = outbox.event_for(it->second);
      event = TokenEvent::finish(out.request_id, out.sample_index, std::move(out.token_ids),
                                 out.finish_reason, std::move(out.error));
      event.logits = std::move(out.logits);
      event.logprobs = std::move(out.logprobs);
    }
    if (done.request_done) st.sinks.erase(it);
  }
  const int64_t sent = outbox.send(self, step_id);
  st.metrics.num_output_messages += sent;
  return sent;
}

void check_drained(Self self) {
  SchedulerState& st = self->state;
  if (!st.shutting_down || st.core->num_requests() > 0 || !st.in_flight.empty()) return;
  // Failed workers that cannot be replaced may wait in a collective for a
  // dead peer: only the end of the job ends them, so it comes now.
  if (st.setup.end_job && !st.core->stopped_serving().empty())
    st.setup.end_job(st.core->stopped_serving());
  stop_workers(self, caf::exit_reason::user_shutdown);
  for (auto& promise : st.shutdown_promises) promise.deliver(st.num_failed_at_shutdown);
  st.shutdown_promises.clear();
  self->quit();
}

InFlightStep* find_in_flight(SchedulerState& st, int64_t step_id) {
  for (InFlightStep& step : st.in_flight)
    if (step.id == step_id) return &step;
  return nullptr;
}

// A fault where workers cannot be replaced (SchedulerSetup::end_job): every
// request ends with the cause now, and the job after the grace. The workers
// are left as they are: a rank waiting in a collective for a dead peer
// cannot be released, and the end of the job ends it.
void stop_serving(Self self, const std::string& cause) {
  SchedulerState& st = self->state;
  if (!st.core->stopped_serving().empty()) return;  // ending already
  for (const worker_actor& w : st.workers) self->demonitor(w.address());
  CoreEvents events =
      st.core->stop_serving(str_cat(cause, "; the job ends (a rank's process is not restarted)"));
  st.in_flight.clear();  // late replies find no step and are ignored
  send_events(self, events);
  self->delayed_send(self, st.setup.end_job_grace, end_job_atom_v);
  check_drained(self);  // a shutdown under way ends the job now
}

// Worker `failed_worker` (-1: not known) failed, died or timed out: the
// core fails the requests that ran on its planning rank and recomputes the
// others (EngineCore::on_fault); every worker is replaced, unless the core
// has stopped serving.
void handle_fault(Self self, const std::string& cause, int failed_worker) {
  SchedulerState& st = self->state;
  if (st.setup.end_job) return stop_serving(self, cause);
  stop_workers(self, caf::exit_reason::kill);
  const int failed_rank = failed_worker < 0 ? -1 : failed_worker / st.setup.tensor_parallel_size;
  CoreEvents events = st.core->on_fault(failed_rank, cause);
  st.in_flight.clear();  // late replies find no step and are ignored
  send_events(self, events);
  if (!st.core->stopped_serving().empty()) return check_drained(self);
  ++st.metrics.num_worker_restarts;
  spawn_workers(self);
  maybe_step(self);
}

// The oldest step in flight has all its replies.
void finish_step(Self self) {
  SchedulerState& st = self->state;
  InFlightStep step = std::move(st.in_flight.front());
  st.in_flight.pop_front();
  const auto now = std::chrono::steady_clock::now();
  st.metrics.step_seconds += std::chrono::duration<double>(now - step.start).count();
  ++st.metrics.num_steps;
  if (!st.in_flight.empty()) {
    // The next step is the workers' from now on, and so is its deadline.
    st.in_flight.front().start = now;
    st.step_deadline = self->clock().now() + st.setup.core.scheduler.worker_timeout;
  }
  // The load goes out before any token: whoever sees a request finish and
  // then asks the expert actor for metrics finds this step counted.
  if (st.setup.expert && !step.load.empty())
    self->send(st.setup.expert, load_atom_v, step.load, step.remote);
  CoreEvents events = st.core->complete_step(step.id, std::move(step.sampled));
  // The next plan goes out before the tokens of this one: the workers
  // compute while the events are sent.
  maybe_step(self);
  if (send_events(self, events, step.id) > 0) ++st.metrics.num_output_steps;
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
  st.core->mark_ran(step_id);
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
  st.core->mark_ran(step_id);
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
  std::optional<CoreStep> planned = st.core->next_step();
  if (!planned) return false;
  InFlightStep& step = st.in_flight.emplace_back();
  const int64_t step_id = step.id = planned->id;
  step.replies_pending = static_cast<int>(st.workers.size());
  step.replied.assign(st.workers.size(), false);
  step.sampled.resize(planned->plans.size());
  if (st.in_flight.size() == 1) {
    step.start = std::chrono::steady_clock::now();
    st.step_deadline = self->clock().now() + st.setup.core.scheduler.worker_timeout;
  }
  watch_steps(self);
  propose_ahead(self, *planned);  // reads the plans before they move out
  // Every rank steps, planned or idle: they meet in the MoE collectives. A
  // tensor-parallel group's workers all get their rank's plan.
  const auto tp = static_cast<size_t>(st.setup.tensor_parallel_size);
  for (size_t rank = 0; rank < planned->plans.size(); ++rank) {
    WorkerStep message{step_id, std::move(planned->plans[rank]), {}};
    if (!st.replicas_sent) message.replicas = st.replicas;
    for (size_t w = rank * tp; w < (rank + 1) * tp; ++w)
      self->request(st.workers[w], caf::infinite, step_atom_v,
                    w + 1 == (rank + 1) * tp ? std::move(message) : message)
          .then([self](WorkerResult& result) { on_reply(self, result); },
                [self, step_id, w](caf::error& err) {
                  on_worker_error(self, step_id, static_cast<int>(w), err);
                });
  }
  st.replicas_sent = true;  // like the block tables, a change: sent once
  return true;
}

}  // namespace

void scheduler_detail::maybe_step(Self self) {
  SchedulerState& st = self->state;
  // No step goes out before every worker has started: loading a shard or
  // allocating a large KV cache can take longer than a step's deadline.
  const bool started = !st.workers.empty() && st.num_ready == st.workers.size();
  while (started && drafts_ready(self) && send_step(self)) {
  }
  check_drained(self);
}

namespace {

void submit(Self self, Submission& submission) {
  SchedulerState& st = self->state;
  const std::string id = submission.request.id;
  if (st.shutting_down) return fail_event(self, submission.sink, id, "the engine is shutting down");
  if (!st.core->stopped_serving().empty())
    return fail_event(self, submission.sink, id,
                      str_cat("the engine stopped serving: ", st.core->stopped_serving()));
  try {
    st.core->add_request(std::move(submission.request));
  } catch (const Error& e) {
    return fail_event(self, submission.sink, id, e.what());
  }
  st.sinks.emplace(id, std::move(submission.sink));
  maybe_step(self);
}

// Ends request `id` (with a sink: only if the request reports to it), or
// only its sample `sample_index` at a stop string.
void cancel(Self self, const std::string& id, const token_sink* sink,
            std::optional<int> sample_index = std::nullopt) {
  SchedulerState& st = self->state;
  const auto it = st.sinks.find(id);
  if (it == st.sinks.end() || (sink && it->second != *sink)) return;
  if (sample_index)
    st.core->abort_request(id, FinishReason::stop_string, sample_index);
  else
    st.core->abort_request(id, FinishReason::aborted, std::nullopt, /*cancelled=*/true);
  // Mid-step, the abort comes back from the step's completion; else now.
  if (!st.in_flight.empty()) return;
  CoreEvents events = st.core->take_aborted();
  send_events(self, events);
  check_drained(self);
}

EngineMetrics snapshot(const SchedulerState& st) {
  EngineMetrics m = st.metrics;
  const CoreCounters& counters = st.core->counters();
  m.num_generated_tokens = counters.num_generated_tokens;
  m.num_finished_requests = counters.num_finished_requests;
  m.num_failed_requests = counters.num_failed_requests;
  m.world_size = static_cast<int>(st.setup.workers.size());
  m.ready = !st.workers.empty() && st.num_ready == st.workers.size();
  m.stopped_serving = st.core->stopped_serving();
  for (int rank = 0; rank < st.core->num_ranks(); ++rank) {
    const Scheduler& scheduler = st.core->scheduler(rank);
    const KVCacheManager& kv_cache = st.core->kv_cache(rank);
    m.num_running += static_cast<int64_t>(scheduler.num_running());
    m.num_waiting += static_cast<int64_t>(scheduler.num_waiting());
    m.num_free_blocks += kv_cache.device_pool().num_free_blocks();
    m.num_blocks += kv_cache.device_pool().num_allocatable_blocks();
    m.prefix_hit_tokens += kv_cache.stats().prefix_hit_tokens;
    m.prefix_queried_tokens += kv_cache.stats().prefix_queried_tokens;
    m.num_preemptions +=
        scheduler.stats().num_preemptions_recompute + scheduler.stats().num_preemptions_swap;
    const SpecDecodeStats& spec = scheduler.stats().spec_decode;
    m.spec_num_drafts += spec.num_drafts;
    m.spec_num_draft_tokens += spec.num_draft_tokens;
    m.spec_num_accepted_tokens += spec.num_accepted_tokens;
    const size_t positions = spec.drafts_per_position.size();
    if (m.spec_drafts_per_position.size() < positions) {
      m.spec_drafts_per_position.resize(positions, 0);
      m.spec_accepted_per_position.resize(positions, 0);
    }
    for (size_t i = 0; i < positions; ++i) {
      m.spec_drafts_per_position[i] += spec.drafts_per_position[i];
      m.spec_accepted_per_position[i] += spec.accepted_per_position[i];
    }
  }
  for (const auto& book : st.proposals) m.spec_used_ahead += book->num_served_ahead();
  return m;
}

}  // namespace

scheduler_actor::behavior_type scheduler(Self self, SchedulerSetup setup) {
  self->state.setup = std::move(setup);
  self->state.metrics.num_experts = self->state.setup.num_experts;
  build_core(self->state);
  scheduler_detail::start_drafts(self);
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
        cancel(self, id, nullptr, sample_index);
      },
      [self](metrics_atom) { return snapshot(self->state); },
      [self](replicas_atom, std::vector<std::vector<int32_t>>& replicas) {
        self->state.replicas = std::move(replicas);
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
        handle_fault(self,
                     str_cat(st.workers.size() - st.num_ready, " of ", st.workers.size(),
                             " workers did not start within ",
                             st.setup.core.scheduler.worker_start_timeout.count(), " ms"),
                     -1);
      },
      [self](watchdog_atom) { on_watchdog(self); },
      [self](end_job_atom) { self->state.setup.end_job(self->state.core->stopped_serving()); },
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
          CoreEvents events;
          st.num_failed_at_shutdown +=
              st.core->fail_all("the engine shut down with the request in flight", events);
          send_events(self, events);
        }
        check_drained(self);
        return promise;
      },
  };
}

}  // namespace hive
