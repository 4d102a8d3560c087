#pragma once
// The scheduler actor: routes the engine loop of an EngineCore
// (runtime/engine/engine_core.hpp), which owns the schedulers, KV managers
// and request table, through messages and timers:
//
//   core.next_step()                        plan every rank
//   send each rank its plan's diff          (a deadline on each step)
//   all workers replied -> load delta to the expert actor;
//   events = core.complete_step(sampled); plan and send the next step;
//   only then send each consumer (sink) one OutputBatch with its requests'
//   new tokens and finished samples, so the workers are computing while the
//   events go out
//
// Besides the core it holds only what the transport needs: the workers,
// each request's sink, the steps in flight with their replies and
// deadlines, and the shutdown promises.
//
// Async scheduling (SchedulerConfig::async_scheduling, the default): up to
// two steps are in flight: a step is planned and sent while the one before
// it runs, its samples pending (see runtime/core/sequence.hpp), so a worker
// finds its next plan waiting when it finishes a step, and the planning,
// the updates and the token events of the scheduler overlap its compute.
// Workers run their steps in order, so step t+1's block copies and writes
// come after step t's reads. A sequence that stops in step t has run in
// step t+1 in vain; its sample there is dropped. Off, one step is in
// flight and the worker of a single-rank engine shares this actor's thread.
// (docs/design/actors.md, "Async scheduling".)
//
// Speculation with a draft model: the draft actor (draft_actor.hpp) runs the
// draft on its own thread, a window ahead; scheduler_actor_drafts.hpp asks it and
// holds a step back until every sequence to speculate has its proposal.
//
// Ranks are data parallel: each request is assigned to one rank (the one
// with the fewest unfinished requests) and lives in that rank's KV cache.
// All ranks step together, even with nothing to run, because an MoE model's
// layers exchange tokens between them (see worker_actor.hpp). With tensor
// parallelism the workers together are one rank: one Scheduler and KV
// manager, the same plan to every worker, the sampled tokens of worker 0
// (every worker samples the same ones from the same all-reduced logits).
//
// The KVCacheManager lives in the core, not in an actor of its own: the pure
// Scheduler consults it synchronously while it builds a plan (can_allocate,
// allocate, swap), and splitting that across two mailboxes would put a
// round-trip inside every scheduling decision.
//
// Timeouts: every step has a deadline (worker_timeout after it was sent, or
// after the step before it was answered), watched by one timer that is
// armed once and re-armed only when it fires, not one timer per request: a
// CAF request timeout costs a clock-thread wake-up, which at batch 1 was a
// third of the actor overhead per step. No step goes out until every worker
// of a generation has said it is ready (a tensor-parallel shard can take
// minutes to load, at start and after a fault), so starting runs under its
// own, longer deadline (worker_start_timeout); a worker that cannot start
// stops with the cause.
//
// Faults: a worker that fails a step, dies or times out fails exactly the
// requests that ran on its rank (with tensor parallelism: on the group),
// with an error naming the rank and the cause. Every worker is replaced
// (ranks meet in collectives), so every KV cache is lost: the other ranks'
// requests are computed again from their tokens and continue where they
// were, sampling included; waiting requests wait on. The engine keeps
// serving. Workers that fail three times in a row without completing a step
// are not restarted again: every request fails and later submissions are
// refused, with the cause.
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/response_promise.hpp>

#include "actors/draft_actor.hpp"
#include "actors/expert_actor.hpp"
#include "actors/worker_actor.hpp"
#include "parallel/in_process_communicator.hpp"
#include "runtime/core/kv_cache_manager.hpp"
#include "runtime/core/proposal_book.hpp"
#include "runtime/core/scheduler.hpp"
#include "runtime/engine/engine_core.hpp"

namespace hive {

using scheduler_actor = caf::typed_actor<
    caf::reacts_to<submit_atom, Submission>, caf::reacts_to<cancel_atom, std::string>,
    // Cancel only if the request still reports to this sink (a
    // dropped stream must not cancel a newer request of its id).
    caf::reacts_to<cancel_atom, std::string, token_sink>,
    // Ends one sample of the request: its text met a stop string (the
    // output processor above found it), FinishReason::stop_string.
    caf::reacts_to<cancel_atom, std::string, int32_t>,
    caf::replies_to<metrics_atom>::with<EngineMetrics>,
    caf::replies_to<shutdown_atom, bool>::with<int64_t>,
    caf::reacts_to<fault_atom, int>,  // testing: rank's next step throws
    // From a worker: it has started (shard loaded, KV cache allocated).
    caf::reacts_to<ready_atom, caf::actor_addr>,
    caf::reacts_to<start_due_atom, int64_t>,  // internal: generation's start deadline
    // From the expert actor: the replicas each rank is to hold from the
    // next step on ([rank] -> experts).
    caf::reacts_to<replicas_atom, std::vector<std::vector<int32_t>>>,
    caf::reacts_to<watchdog_atom>,            // internal: the step deadline timer
    caf::reacts_to<watchdog_atom, int64_t>,   // internal: step id past it
    caf::reacts_to<end_job_atom>>;            // internal: the grace after a fault ran out

// What the scheduler actor starts from: its engine core's configuration
// (derived from the config tree by engine_core_config, held by value as
// the actor's own) and the handles it needs.
struct SchedulerSetup {
  // The KV pool and scheduler limits per planning rank, the speculative
  // settings and their measured step costs. core.scheduler.worker_timeout:
  // a step not answered by then is a fault. A worker that shares the
  // scheduler's thread (not detached): there a step that runs is always
  // answered (its reply is read before the deadline is checked again), and
  // a step that hangs blocks the engine; the deadline catches only a worker
  // that never ran the step. core.scheduler.worker_start_timeout: a
  // generation of workers not all started (ready) by then is a fault: a
  // load that hangs must not stall its requests for ever.
  EngineCoreConfig core;
  std::vector<WorkerSpec> workers;  // one per rank, rank order
  bool detached_workers = false;    // each worker on its own thread (needed for > 1 rank)
  int tensor_parallel_size = 1;     // workers per planning rank (1, or all of them)
  int num_experts = 0;
  int num_layers = 0;
  PlacementKind placement = PlacementKind::contiguous;
  // Makes each worker generation's rank group (MoE or tensor-parallel
  // models); threads of this process unless told otherwise.
  RankGroupFactory make_group = [](int world_size) {
    return std::make_shared<InProcessGroup>(world_size);
  };
  // Starts one rank's worker where that rank lives (another process: actors/
  // worker_ranks.hpp); empty: every worker is spawned here, by the scheduler.
  // It may throw: the scheduler then stops with the cause.
  std::function<worker_actor(const WorkerSpec&)> spawn_worker;
  // Set where workers cannot be replaced (ranks in other processes: their
  // group cannot be made again without every process). A fault then fails
  // every request with its cause and stops serving; after end_job_grace,
  // time for the streams to carry their error events and for /health to say
  // so, this ends every process of the job (it need not return).
  std::function<void(const std::string& cause)> end_job;
  std::chrono::milliseconds end_job_grace{2000};
  expert_actor expert;  // optional: receives each step's expert load
  // Speculative decoding with a draft model: its drafters (one per planning
  // rank, sharing the draft) run in the draft actor (draft_actor.hpp).
  std::shared_ptr<Model> draft_model;
  std::vector<std::shared_ptr<DraftModelDrafter>> drafters;
};

// A step sent to the workers and not yet answered by all of them.
struct InFlightStep {
  int64_t id = 0;
  std::vector<std::vector<SampledToken>> sampled;  // per planning rank
  std::vector<bool> replied;                       // per worker
  int replies_pending = 0;
  std::vector<int64_t> load;    // summed over the ranks' replies
  std::vector<int64_t> remote;  // the same: tokens sent to another rank
  // When the workers took it up: sent, or the step before it answered.
  std::chrono::steady_clock::time_point start;
};

struct SchedulerState {
  SchedulerSetup setup;
  std::unique_ptr<EngineCore> core;         // the engine state: schedulers, KV managers, requests
  std::map<std::string, token_sink> sinks;  // per request in the core: who gets its events
  std::vector<worker_actor> workers;
  std::shared_ptr<RankGroup> group;            // this generation of workers' group
  int64_t generation = 0;                      // workers spawned so far, as generations
  size_t num_ready = 0;                        // of its workers, those that have started
  std::vector<std::vector<int32_t>> replicas;  // from the expert actor, [rank]
  bool replicas_sent = false;                  // to this generation of workers

  // The steps in flight, oldest first; the deadline is the oldest's.
  std::deque<InFlightStep> in_flight;
  caf::actor_clock::time_point step_deadline;  // on the actor clock (tests drive it)
  bool watchdog_armed = false;

  // Shutdown: drain (or fail) then answer these.
  bool shutting_down = false;
  std::vector<caf::typed_response_promise<int64_t>> shutdown_promises;
  int64_t num_failed_at_shutdown = 0;

  // Speculation with a draft model: the draft actor, per planning rank the
  // proposals it made (the core's drafters), and its answers awaited.
  draft_actor draft;
  std::vector<std::unique_ptr<ProposalBook>> proposals;
  int draft_work_pending = 0;

  EngineMetrics metrics;
  static inline const char* name = "hive.scheduler";
};

class Model;
struct EngineConfig;

// The scheduler's setup for `model` on `world_size` ranks (one
// tensor-parallel group when tensor_parallel_size is world_size): the KV pool
// sized from config.kv_budget, the scheduler with the model's eos ids.
SchedulerSetup make_scheduler_setup(std::shared_ptr<Model> model, const EngineConfig& config,
                                    int world_size, int tensor_parallel_size = 1);

scheduler_actor::behavior_type scheduler(scheduler_actor::stateful_pointer<SchedulerState> self,
                                         SchedulerSetup setup);

}  // namespace hive
