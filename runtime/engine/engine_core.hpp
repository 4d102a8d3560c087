#pragma once
// EngineCore: the engine loop without a transport. It owns, per planning
// rank, a Scheduler and the KVCacheManager it plans with, and the request
// table (which rank holds a request, how many of its samples are left,
// whether it ran, failed or was cancelled). Its owner moves the plans to
// whatever computes them and hands the results back:
//
//   while (auto step = core.next_step())   plan every rank
//     send step->plans[rank] to rank's workers
//   on all ranks' results: events = core.complete_step(id, sampled)
//   on a failed worker:    events = core.on_fault(rank, cause)
//
// The actor engine (actors/scheduler_actor.hpp) routes these through
// messages, timers and deadlines, with up to two steps in flight (async
// scheduling); the offline LLMEngine calls them in a loop with one. Neither
// holds engine state of its own beyond what its transport needs.
//
// Ranks are data parallel: each request is assigned to one rank (the one
// with the fewest unfinished requests) and lives in that rank's KV cache.
// Every rank gets a plan each step, empty or not (an MoE model's ranks meet
// in collectives).
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/kv_cache_manager.hpp"
#include "runtime/core/scheduler.hpp"
#include "runtime/core/speculative_config.hpp"

namespace hive {

struct EngineCoreConfig {
  KVCacheConfig kv_cache;     // per rank
  // Per rank. With async_scheduling, two steps may be in flight: step t+1
  // is planned while step t runs; else one.
  SchedulerConfig scheduler;
  int num_ranks = 1;          // planning ranks (a tensor-parallel group is one)
  int64_t vocab_size = 0;     // prompt token ids are checked against it
  // Speculative decoding: with it, one step is in flight (see Scheduler).
  // The engine core makes the n-gram drafters; a draft model's drafter is
  // its owner's to make and set (set_drafter).
  SpeculativeConfig speculative;
  // Step costs for its load-aware control (speculative.adaptive); empty:
  // drafts whenever there are any.
  SpecCostModel spec_cost;
};

// A step planned on every rank.
struct CoreStep {
  int64_t id = 0;
  std::vector<StepPlan> plans;  // per rank
};

// A token a step added to one sample's output, for streaming it.
struct NewToken {
  std::string request_id;
  int sample_index = 0;
  int32_t token = 0;
  std::optional<TokenLogprobs> logprobs = std::nullopt;  // when the request asks for them
};

// A sample that ended; `request_done` when it was its request's last.
struct FinishedSample {
  SequenceOutput output;  // output.error non-empty: the sample failed
  bool request_done = false;
};

// What a call changed for the requests, in order: tokens first.
struct CoreEvents {
  std::vector<NewToken> tokens;
  std::vector<FinishedSample> finished;
};

struct CoreCounters {
  int64_t num_generated_tokens = 0;  // streamed
  int64_t num_finished_requests = 0;
  int64_t num_failed_requests = 0;
};

class EngineCore {
 public:
  // A worker generation that fails this many times in a row without
  // completing a step stops the engine (see on_fault).
  static constexpr int kMaxConsecutiveFaults = 3;

  explicit EngineCore(const EngineCoreConfig& config);

  // Checks the request (prompt token ids, a fresh id, what its rank's
  // scheduler refuses) and queues it on the least loaded rank; throws
  // hive::Error naming the problem, queueing nothing.
  void add_request(Request request);
  // Ends the request (or one of its samples) with `reason`; `cancelled`
  // marks it ended by its owner, so that a later fault or shutdown is not
  // its error. The outputs come from the next complete_step(), or from
  // take_aborted() when no step is in flight. Unknown ids are ignored.
  void abort_request(const std::string& id, FinishReason reason = FinishReason::aborted,
                     std::optional<int> sample_index = std::nullopt, bool cancelled = false);
  // The samples aborted since the last step completed.
  CoreEvents take_aborted();

  // Plans the next step on every rank, unless as many steps as async
  // scheduling allows are in flight, nothing is unfinished, or (`force` aside) a step is in flight
  // and this one would run nothing on any rank (its finished sequences then
  // go with the next).
  std::optional<CoreStep> next_step(bool force = false);
  // Every rank of the oldest step in flight, `step_id`, sampled these
  // (per rank). Returns the tokens and the finished samples.
  CoreEvents complete_step(int64_t step_id, std::vector<std::vector<SampledToken>> sampled);
  // The steps in flight up to `step_id` were taken up by the workers: their
  // requests have run (and may be what made a worker fail).
  void mark_ran(int64_t step_id);

  // A worker of `rank` (-1: not known which) failed, died or overran a
  // step, and every worker is replaced (ranks meet in collectives), so every
  // KV cache is lost. The requests that ever ran on the rank (on any rank
  // when it is not known) fail with `cause`; the others are computed again
  // from their tokens and go on where they were. After kMaxConsecutiveFaults
  // without a completed step every request fails and stopped_serving() says
  // why.
  CoreEvents on_fault(int rank, const std::string& cause);
  // The workers cannot be replaced (ranks in other processes): every request
  // fails with `cause`, and stopped_serving() says it from now on.
  CoreEvents stop_serving(const std::string& cause);
  // The KV caches were lost without anyone's fault: every unfinished
  // sequence is computed again from its tokens; the steps in flight are void.
  void recompute_all();
  // Fails the requests with `error`; returns how many were not cancelled.
  int64_t fail_all(const std::string& error, CoreEvents& events);

  bool has_unfinished() const;
  bool has_aborted() const;
  bool has_request(const std::string& id) const { return requests_.count(id) > 0; }
  size_t num_requests() const { return requests_.size(); }
  size_t num_in_flight() const { return in_flight_.size(); }
  int64_t last_step_id() const { return step_id_; }
  const std::string& stopped_serving() const { return stopped_serving_; }
  int num_ranks() const { return static_cast<int>(ranks_.size()); }
  const Scheduler& scheduler(int rank) const { return *ranks_.at(static_cast<size_t>(rank)).scheduler; }
  const KVCacheManager& kv_cache(int rank) const {
    return *ranks_.at(static_cast<size_t>(rank)).kv_cache;
  }
  const CoreCounters& counters() const { return counters_; }
  // A draft model's drafter for `rank`'s scheduler; it must outlive the core.
  void set_drafter(int rank, Drafter* drafter);
  // The drafts rank's next step will ask its drafter for, unless requests
  // come or go first (Scheduler::draft_queries).
  std::vector<DraftQuery> draft_queries(int rank) const {
    return scheduler(rank).draft_queries();
  }

 private:
  struct Rank {
    std::unique_ptr<KVCacheManager> kv_cache;
    std::unique_ptr<Scheduler> scheduler;
    std::unique_ptr<Drafter> drafter;  // the n-gram drafter, when it speculates with one
    int64_t num_requests = 0;  // assigned, not yet finished
  };
  struct Tracked {
    int rank = 0;
    int samples_left = 1;
    bool started = false;    // ran on its rank's workers
    bool failed = false;     // a sample ended with an error
    bool cancelled = false;  // ended by its owner
  };
  struct InFlight {
    int64_t id = 0;
    std::vector<std::vector<std::string>> request_ids;  // per rank: those its plan runs
  };

  void finish(std::vector<SequenceOutput>& outputs, const std::string& error, CoreEvents& events);
  void fail(const std::vector<std::string>& ids, const std::string& error, CoreEvents& events);
  void mark_started(const InFlight& step);

  EngineCoreConfig config_;
  std::vector<Rank> ranks_;
  std::map<std::string, Tracked> requests_;
  std::deque<InFlight> in_flight_;  // oldest first
  int64_t step_id_ = 0;             // the last one planned
  int consecutive_faults_ = 0;
  std::string stopped_serving_;
  CoreCounters counters_;
};

}  // namespace hive
