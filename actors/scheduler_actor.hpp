#pragma once
// The scheduler actor: owns the Scheduler and the KVCacheManager it plans
// with, the request table (who receives which tokens), and the step loop:
//
//   plan = scheduler.schedule()             which sequences, how many tokens
//   send the plan's diff to every worker    (timeout on each request)
//   all ranks replied -> scheduler.update(plan, rank 0's sampled tokens)
//   stream new tokens and finished samples to their sinks, plan the next step
//
// The KVCacheManager lives here, not in an actor of its own: the pure
// Scheduler consults it synchronously while it builds a plan (can_allocate,
// allocate, swap), and splitting that across two mailboxes would put a
// round-trip inside every scheduling decision. This actor is its one owner.
//
// Faults: a worker that fails a step, dies or times out fails exactly the
// requests whose KV it held (those that ever ran), with an error naming the
// rank and the cause. The KV manager and scheduler are rebuilt (the dead
// rank's blocks and prefix-cache entries are gone), waiting requests are
// queued again and fresh workers are spawned; the engine keeps serving.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/response_promise.hpp>

#include "actors/worker_actor.hpp"
#include "runtime/kv_cache_manager.hpp"
#include "runtime/scheduler.hpp"

namespace hive {

using scheduler_actor =
    caf::typed_actor<caf::reacts_to<submit_atom, Submission>,
                     caf::reacts_to<cancel_atom, std::string>,
                     caf::replies_to<metrics_atom>::with<EngineMetrics>,
                     caf::replies_to<shutdown_atom, bool>::with<int64_t>,
                     caf::reacts_to<fault_atom, int>>;  // testing: rank's next step throws

struct SchedulerSetup {
  KVCacheConfig kv_cache;
  SchedulerConfig scheduler;
  std::vector<WorkerSpec> workers;  // one per rank, rank order
  bool detached_workers = false;    // each worker on its own thread (needed for > 1 rank)
  std::chrono::milliseconds worker_timeout{60000};
  int64_t vocab_size = 0;  // prompt token ids are checked against it
  int num_experts = 0;
  int num_layers = 0;
};

// One submitted request: where its tokens go and how far it got.
struct TrackedRequest {
  Request request;
  token_sink sink;
  int64_t order = 0;  // submission order, kept when re-queued after a fault
  int samples_left = 1;
  bool started = false;  // appeared in a plan: a worker holds its KV
};

struct SchedulerState {
  SchedulerSetup setup;
  std::unique_ptr<KVCacheManager> kv_cache;
  std::unique_ptr<Scheduler> scheduler;
  std::vector<worker_actor> workers;
  PlanEncoder encoder;
  std::map<std::string, TrackedRequest> requests;
  int64_t next_order = 0;

  // The step in flight.
  bool step_in_flight = false;
  StepPlan plan;
  int64_t step_id = 0;
  int replies_pending = 0;
  bool step_failed = false;
  std::vector<SampledToken> sampled;
  std::chrono::steady_clock::time_point step_start;

  // Shutdown: drain (or fail) then answer these.
  bool shutting_down = false;
  std::vector<caf::typed_response_promise<int64_t>> shutdown_promises;
  int64_t num_failed_at_shutdown = 0;

  EngineMetrics metrics;
  static inline const char* name = "hive.scheduler";
};

class Model;
struct EngineConfig;

// The scheduler's setup for `model` on `world_size` ranks: the KV pool sized
// from config.kv_budget, the scheduler with the model's eos ids.
SchedulerSetup make_scheduler_setup(std::shared_ptr<Model> model, const EngineConfig& config,
                                    int world_size);

scheduler_actor::behavior_type scheduler(scheduler_actor::stateful_pointer<SchedulerState> self,
                                         SchedulerSetup setup);

}  // namespace hive
