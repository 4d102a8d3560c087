#include "runtime/engine/engine_core.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace hive {

EngineCore::EngineCore(const EngineCoreConfig& config) : config_(config) {
  check(config.num_ranks >= 1, "engine core: num_ranks must be at least 1, got ",
        config.num_ranks);
  validate(config.speculative);
  config_.scheduler.num_speculative_tokens =
      config.speculative.enabled() ? config.speculative.num_speculative_tokens : 0;
  ranks_ = std::vector<Rank>(static_cast<size_t>(config.num_ranks));
  for (Rank& rank : ranks_) {
    rank.kv_cache = std::make_unique<KVCacheManager>(config.kv_cache);
    rank.scheduler = std::make_unique<Scheduler>(config_.scheduler, *rank.kv_cache);
    if (config.speculative.enabled() && config.speculative.adaptive)
      rank.scheduler->set_spec_cost(config.spec_cost);
    if (config.speculative.method != SpeculativeMethod::ngram) continue;
    rank.drafter = std::make_unique<NgramDrafter>(config.speculative.ngram);
    rank.scheduler->set_drafter(rank.drafter.get());
  }
}

void EngineCore::set_drafter(int rank, Drafter* drafter) {
  check(rank >= 0 && rank < num_ranks(), "engine core: no rank ", rank);
  ranks_[static_cast<size_t>(rank)].scheduler->set_drafter(drafter);
}

void EngineCore::add_request(Request request) {
  const std::string id = request.id;
  for (const int32_t token : request.prompt_token_ids)
    check(token >= 0 && token < config_.vocab_size, "request ", id, ": prompt token id ", token,
          " is out of range [0, ", config_.vocab_size, ")");
  check(!requests_.count(id), "request id '", id, "' is already in use");
  // Data parallel: the rank with the fewest unfinished requests (lowest on ties).
  const auto least =
      std::min_element(ranks_.begin(), ranks_.end(), [](const Rank& a, const Rank& b) {
        return a.num_requests < b.num_requests;
      });
  const int samples = request.n;
  least->scheduler->add_request(std::move(request));
  ++least->num_requests;
  requests_.emplace(id, Tracked{static_cast<int>(least - ranks_.begin()), samples});
}

void EngineCore::abort_request(const std::string& id, FinishReason reason,
                               std::optional<int> sample_index, bool cancelled) {
  const auto it = requests_.find(id);
  if (it == requests_.end()) return;
  it->second.cancelled |= cancelled;
  ranks_[static_cast<size_t>(it->second.rank)].scheduler->abort_request(id, reason, sample_index);
}

CoreEvents EngineCore::take_aborted() {
  CoreEvents events;
  for (Rank& rank : ranks_) {
    std::vector<SequenceOutput> outputs = rank.scheduler->take_aborted();
    finish(outputs, "", events);
  }
  return events;
}

bool EngineCore::has_unfinished() const {
  return std::any_of(ranks_.begin(), ranks_.end(),
                     [](const Rank& rank) { return rank.scheduler->has_unfinished(); });
}

bool EngineCore::has_aborted() const {
  return std::any_of(ranks_.begin(), ranks_.end(),
                     [](const Rank& rank) { return rank.scheduler->has_aborted(); });
}

std::optional<CoreStep> EngineCore::next_step(bool force) {
  // A speculating sequence waits for its verdict before it is planned again:
  // a second step in flight would find little to run.
  const size_t depth =
      config_.scheduler.async_scheduling && config_.scheduler.num_speculative_tokens == 0 ? 2 : 1;
  if (!force && (in_flight_.size() >= depth || !has_unfinished()))
    return std::nullopt;
  CoreStep step;
  for (Rank& rank : ranks_) step.plans.push_back(rank.scheduler->schedule());
  if (!force && !in_flight_.empty() &&
      std::all_of(step.plans.begin(), step.plans.end(),
                  [](const StepPlan& plan) { return plan.runs_nothing(); })) {
    for (size_t r = 0; r < ranks_.size(); ++r)
      ranks_[r].scheduler->drop_empty_plan(std::move(step.plans[r]));
    return std::nullopt;
  }
  step.id = ++step_id_;
  InFlight& record = in_flight_.emplace_back();
  record.id = step.id;
  record.request_ids.resize(ranks_.size());
  for (size_t r = 0; r < ranks_.size(); ++r)
    for (const ScheduledSequence& s : step.plans[r].sequences)
      record.request_ids[r].push_back(ranks_[r].scheduler->sequence(s.seq_id).request->id);
  return step;
}

// The step ran (its workers answered, or one failed in it or overran it):
// the requests in its plans have run on their rank. A step that never ran
// (a worker killed before taking it up, a step queued behind the one that
// failed) marks nothing: its requests cannot have caused the fault.
void EngineCore::mark_started(const InFlight& step) {
  for (const auto& ids : step.request_ids)
    for (const std::string& id : ids)
      if (const auto it = requests_.find(id); it != requests_.end()) it->second.started = true;
}

void EngineCore::mark_ran(int64_t step_id) {
  for (const InFlight& step : in_flight_)
    if (step.id <= step_id) mark_started(step);
}

CoreEvents EngineCore::complete_step(int64_t step_id,
                                     std::vector<std::vector<SampledToken>> sampled) {
  check(!in_flight_.empty() && in_flight_.front().id == step_id, "step ", step_id,
        " completed, but it is not the oldest step in flight");
  check(sampled.size() == ranks_.size(), "step ", step_id, ": results of ", sampled.size(),
        " ranks, expected ", ranks_.size());
  mark_started(in_flight_.front());
  in_flight_.pop_front();
  consecutive_faults_ = 0;
  CoreEvents events;
  for (size_t r = 0; r < ranks_.size(); ++r) {
    Scheduler& scheduler = *ranks_[r].scheduler;
    // Named before update(), which forgets the sequences that finish.
    std::vector<std::optional<NewToken>> named(sampled[r].size());
    for (size_t i = 0; i < sampled[r].size(); ++i) {
      const SampledToken& token = sampled[r][i];
      if (!scheduler.has_sequence(token.seq_id)) continue;
      const Sequence& seq = scheduler.sequence(token.seq_id);
      named[i] = NewToken{seq.request->id, seq.sample_index, token.token, token.logprobs};
    }
    // Those that joined an output: not a failed sample's, nor one of a
    // sequence cancelled while the step ran or stopped before it (by the
    // step before, or by a draft token this step accepted). One preempted
    // since, by a plan made while this step ran, still counts.
    std::vector<size_t> appended;
    std::vector<SequenceOutput> outputs = scheduler.update(sampled[r], &appended);
    for (const size_t i : appended) {
      if (!named[i] || !requests_.count(named[i]->request_id)) continue;
      events.tokens.push_back(std::move(*named[i]));
      ++counters_.num_generated_tokens;
    }
    finish(outputs, "", events);
  }
  return events;
}

// Hands finished samples out; `error` marks them failed unless their owner
// cancelled them (a fault or a shutdown is then not their error).
void EngineCore::finish(std::vector<SequenceOutput>& outputs, const std::string& error,
                        CoreEvents& events) {
  for (SequenceOutput& out : outputs) {
    const auto it = requests_.find(out.request_id);
    if (it == requests_.end()) continue;
    Tracked& tracked = it->second;
    if (out.error.empty() && !tracked.cancelled) out.error = error;
    tracked.failed |= !out.error.empty();
    const bool done = --tracked.samples_left <= 0;
    events.finished.push_back({std::move(out), done});
    if (!done) continue;
    --ranks_[static_cast<size_t>(tracked.rank)].num_requests;
    ++(tracked.failed ? counters_.num_failed_requests : counters_.num_finished_requests);
    requests_.erase(it);
  }
}

void EngineCore::fail(const std::vector<std::string>& ids, const std::string& error,
                      CoreEvents& events) {
  for (const std::string& id : ids)
    if (const auto it = requests_.find(id); it != requests_.end())
      ranks_[static_cast<size_t>(it->second.rank)].scheduler->abort_request(id);
  for (Rank& rank : ranks_) {
    std::vector<SequenceOutput> outputs = rank.scheduler->take_aborted();
    finish(outputs, error, events);
  }
}

int64_t EngineCore::fail_all(const std::string& error, CoreEvents& events) {
  std::vector<std::string> ids;
  int64_t failed = 0;
  for (const auto& [id, tracked] : requests_) {
    ids.push_back(id);
    if (!tracked.cancelled) ++failed;  // a cancelled one ends as such
  }
  fail(ids, error, events);
  return failed;
}

void EngineCore::recompute_all() {
  for (Rank& rank : ranks_) rank.scheduler->recompute_all();
  in_flight_.clear();
}

CoreEvents EngineCore::on_fault(int rank, const std::string& cause) {
  CoreEvents events;
  if (++consecutive_faults_ >= kMaxConsecutiveFaults)
    return stop_serving(str_cat("the workers failed ", consecutive_faults_,
                                " times in a row without completing a step; the last: ", cause));
  std::vector<std::string> started;
  for (const auto& [id, tracked] : requests_)
    if (tracked.started && (rank < 0 || tracked.rank == rank)) started.push_back(id);
  fail(started, cause, events);
  recompute_all();
  return events;
}

CoreEvents EngineCore::stop_serving(const std::string& cause) {
  CoreEvents events;
  stopped_serving_ = cause;
  fail_all(stopped_serving_, events);
  in_flight_.clear();
  return events;
}

}  // namespace hive
