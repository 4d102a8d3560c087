#pragma once
// The messages of the actor runtime: plain structs, each with an inspect
// overload, all registered in actors/type_ids.hpp. Only the control plane
// rides on them (token ids, block ids, sampled tokens, counters); tensors
// never do.
//
// A step's plan is the scheduler's StepPlan itself, sent to every worker of
// a rank; it carries each sequence's new token ids and only the change to
// its block table, which the worker keeps (runtime/core/block_tables.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/typed_actor.hpp>

#include "runtime/core/request.hpp"
#include "runtime/core/scheduler.hpp"

namespace hive {

// The plan of one step, sent to every worker of a rank.
struct WorkerStep {
  int64_t step_id = 0;
  StepPlan plan;
  // A new replica placement (from the expert actor), ExpertPlacement::
  // set_replicas' shape: [rank] -> experts it holds besides its home ones;
  // empty: unchanged. All ranks get it in the same step and switch before
  // running it, so their placements never disagree within a step.
  std::vector<std::vector<int32_t>> replicas;
};

// A worker's reply: the tokens sampled for this rank's sequences.
struct WorkerResult {
  int64_t step_id = 0;
  int rank = 0;
  std::vector<SampledToken> sampled;
  double compute_seconds = 0;          // inside the model runner
  std::vector<int64_t> expert_load;    // [layer * num_experts + expert], this step
  std::vector<int64_t> expert_remote;  // of those, sent to another rank
};

// Draft tokens wanted for one sequence, from the draft actor: the draft
// model follows `token_ids` and proposes up to max_tokens after them,
// drawing with `sampling` (its argmax when greedy).
struct DraftJob {
  int64_t seq_id = 0;
  int32_t sample_index = 0;
  SamplingParams sampling;
  std::vector<int32_t> token_ids;
  int32_t max_tokens = 0;
};

// A planning rank's draft jobs, and the sequences the draft actor may forget
// (ended, or their KV lost).
struct DraftWork {
  int32_t rank = 0;
  std::vector<DraftJob> jobs;
  std::vector<int64_t> released;
};

// The draft actor's answer: per job, in order, its tokens and (when it drew
// them from a distribution) the distributions.
struct DraftAnswer {
  std::vector<std::vector<int32_t>> token_ids;
  std::vector<std::vector<std::vector<float>>> probs;
};

// What a request's owner receives: new tokens of one sample, and once, the
// end of that sample (finish reason, all generated ids, or an error).
struct TokenEvent {
  std::string request_id;
  int sample_index = 0;
  std::vector<int32_t> token_ids;  // new since the last event (all of them when finished)
  bool finished = false;
  uint8_t finish_reason = 0;  // a FinishReason
  std::string error;          // non-empty: the request (sample_index -1) or this sample failed
  // Finished events of a request with return_logits: one row per generated
  // token, as LLMEngine returns them.
  std::vector<std::vector<float>> logits;
  // With SamplingParams::logprobs: one per id in token_ids (raw-model
  // logprobs, see token_logprobs.hpp); the output processor formats them.
  std::vector<TokenLogprobs> logprobs;
  FinishReason reason() const { return static_cast<FinishReason>(finish_reason); }

  static TokenEvent token(std::string id, int sample_index, int32_t token) {
    TokenEvent e;
    e.request_id = std::move(id);
    e.sample_index = sample_index;
    e.token_ids = {token};
    return e;
  }
  static TokenEvent finish(std::string id, int sample_index, std::vector<int32_t> tokens,
                           FinishReason reason, std::string error) {
    TokenEvent e;
    e.request_id = std::move(id);
    e.sample_index = sample_index;
    e.token_ids = std::move(tokens);
    e.finished = true;
    e.finish_reason = static_cast<uint8_t>(reason);
    e.error = std::move(error);
    return e;
  }
};

// One message per step for one consumer: the step's events of every request
// that reports to it, in order (a sample's new tokens in one event, then the
// finished samples). A consumer is what a Submission names as its sink: a
// stream or callback of one request, or a client of many (Engine::connect),
// so a step costs one message per consumer, not one per token.
struct OutputBatch {
  std::vector<TokenEvent> events;
  int64_t step_id = 0;  // the step that completed; 0: outside a step (a cancel, a fault)
};

// What receives a request's outputs (a stream, a callback, a client, a test).
using token_sink = caf::typed_actor<caf::reacts_to<OutputBatch>>;

// A request and the actor that receives its TokenEvents.
struct Submission {
  Request request;
  token_sink sink;
};

// A snapshot of the engine, from the scheduler actor.
struct EngineMetrics {
  int64_t num_steps = 0;
  int64_t num_generated_tokens = 0;
  int64_t num_finished_requests = 0;
  int64_t num_failed_requests = 0;  // a sample ended with an error (fault, shutdown, sampling)
  int64_t num_worker_restarts = 0;
  bool ready = false;  // every worker of the current generation has started
  int64_t num_running = 0;
  int64_t num_waiting = 0;
  int32_t num_free_blocks = 0;
  int32_t num_blocks = 0;  // allocatable
  int64_t prefix_hit_tokens = 0;
  int64_t prefix_queried_tokens = 0;
  int64_t num_preemptions = 0;  // by recompute or swap
  // OutputBatch messages sent to consumers, and the completed steps that
  // had outputs: one message per consumer of those steps' requests.
  int64_t num_output_messages = 0;
  int64_t num_output_steps = 0;
  // Scheduler: a step taken up (sent, or the one before it answered) -> all
  // ranks replied.
  double step_seconds = 0;
  double compute_seconds = 0;  // rank 0: inside the model runner
  int world_size = 1;
  int num_experts = 0;                      // per MoE layer; 0 for a dense model
  std::vector<int64_t> expert_load;         // tokens routed, [layer * num_experts + expert]
  std::vector<int64_t> expert_remote;       // of those, computed on another rank than theirs
  std::vector<double> expert_imbalance;     // [layer]: max / mean load; 0 where none
  std::vector<int32_t> replicated_experts;  // held by every rank
  int64_t expert_replans = 0;               // live balancing: placements switched to
  // Speculative decoding (all ranks): sequence-steps that verified drafts,
  // draft tokens, accepted ones; per draft position, drafts that reached it
  // and those accepted there.
  int64_t spec_num_drafts = 0;
  int64_t spec_num_draft_tokens = 0;
  int64_t spec_num_accepted_tokens = 0;
  std::vector<int64_t> spec_drafts_per_position;
  std::vector<int64_t> spec_accepted_per_position;
  // The draft actor: proposals made a window ahead (while the target
  // verified the drafts before them), and those a step then used.
  int64_t spec_proposed_ahead = 0;
  int64_t spec_used_ahead = 0;
  std::string spec_draft_error;  // why the draft actor stopped; empty while it drafts
  // Why the engine fails every request (its workers failed and cannot be
  // replaced); empty while it serves.
  std::string stopped_serving;
};

// The expert actor's statistics (see expert_actor.hpp).
struct ExpertStats {
  int num_experts = 0;
  std::vector<int64_t> load;        // [layer * num_experts + expert]
  std::vector<int64_t> remote;      // the same shape: sent to another rank
  std::vector<double> imbalance;    // [layer]
  std::vector<int32_t> replicated;  // held by every rank
  int64_t replans = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, BlockCopy& x) {
  return f(caf::meta::type_name("BlockCopy"), x.src, x.dst);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, SamplingParams& x) {
  // The optional seed as a flag and a value; the optional logprobs as -1
  // for none (validate() rejects negative counts).
  bool seeded = x.seed.has_value();
  uint64_t seed = x.seed.value_or(0);
  int logprobs = x.logprobs.value_or(-1);
  return f(caf::meta::type_name("SamplingParams"), x.temperature, x.top_k, x.top_p, seeded, seed,
           x.min_p, x.presence_penalty, x.frequency_penalty, x.repetition_penalty, logprobs,
           caf::meta::load_callback([&]() -> caf::error {
             x.seed = seeded ? std::optional<uint64_t>(seed) : std::nullopt;
             x.logprobs = logprobs >= 0 ? std::optional<int>(logprobs) : std::nullopt;
             return caf::none;
           }));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, TokenHistory& x) {
  return f(caf::meta::type_name("TokenHistory"), x.prompt_token_ids, x.output_token_ids);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, SampleSlot& x) {
  bool has_sampling = x.sampling.has_value();
  SamplingParams sampling = x.sampling.value_or(SamplingParams{});
  bool has_history = x.history.has_value();
  TokenHistory history = x.history.value_or(TokenHistory{});
  return f(caf::meta::type_name("SampleSlot"), x.seq_id, x.scheduled_index, has_sampling, sampling,
           x.return_logits, x.num_sampled, has_history, history, x.draft_token_ids, x.draft_probs,
           caf::meta::load_callback([&]() -> caf::error {
             x.sampling =
                 has_sampling ? std::optional<SamplingParams>(std::move(sampling)) : std::nullopt;
             x.history =
                 has_history ? std::optional<TokenHistory>(std::move(history)) : std::nullopt;
             return caf::none;
           }));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, TokenLogprobs& x) {
  return f(caf::meta::type_name("TokenLogprobs"), x.logprob, x.top_token_ids, x.top_logprobs);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, SampledToken& x) {
  bool has_logprobs = x.logprobs.has_value();
  TokenLogprobs logprobs = x.logprobs.value_or(TokenLogprobs{});
  return f(caf::meta::type_name("SampledToken"), x.seq_id, x.token, x.logits, has_logprobs,
           logprobs, x.error, x.accepted_draft, caf::meta::load_callback([&]() -> caf::error {
             x.logprobs =
                 has_logprobs ? std::optional<TokenLogprobs>(std::move(logprobs)) : std::nullopt;
             return caf::none;
           }));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StopConditions& x) {
  return f(caf::meta::type_name("StopConditions"), x.max_tokens, x.ignore_eos, x.stop_token_ids);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Request& x) {
  return f(caf::meta::type_name("Request"), x.id, x.prompt_token_ids, x.sampling, x.stop, x.n,
           x.priority, x.cache_extra_keys, x.return_logits);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ScheduledSequence& x) {
  return f(caf::meta::type_name("ScheduledSequence"), x.seq_id, x.num_computed_tokens, x.token_ids,
           x.num_kept_blocks, x.new_block_ids, x.needs_logits, x.num_draft_tokens);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StepPlan& x) {
  return f(caf::meta::type_name("StepPlan"), x.sequences, x.samples, x.swap_out, x.swap_in,
           x.copy_on_write, x.finished_seq_ids);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, WorkerStep& x) {
  return f(caf::meta::type_name("WorkerStep"), x.step_id, x.plan, x.replicas);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, WorkerResult& x) {
  return f(caf::meta::type_name("WorkerResult"), x.step_id, x.rank, x.sampled, x.compute_seconds,
           x.expert_load, x.expert_remote);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, DraftJob& x) {
  return f(caf::meta::type_name("DraftJob"), x.seq_id, x.sample_index, x.sampling, x.token_ids,
           x.max_tokens);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, DraftWork& x) {
  return f(caf::meta::type_name("DraftWork"), x.rank, x.jobs, x.released);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, DraftAnswer& x) {
  return f(caf::meta::type_name("DraftAnswer"), x.token_ids, x.probs);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, TokenEvent& x) {
  return f(caf::meta::type_name("TokenEvent"), x.request_id, x.sample_index, x.token_ids,
           x.finished, x.finish_reason, x.error, x.logits, x.logprobs);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, OutputBatch& x) {
  return f(caf::meta::type_name("OutputBatch"), x.events, x.step_id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Submission& x) {
  return f(caf::meta::type_name("Submission"), x.request, x.sink);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, EngineMetrics& x) {
  return f(caf::meta::type_name("EngineMetrics"), x.num_steps, x.num_generated_tokens,
           x.num_finished_requests, x.num_failed_requests, x.num_worker_restarts, x.ready,
           x.num_running, x.num_waiting, x.num_free_blocks, x.num_blocks, x.prefix_hit_tokens,
           x.prefix_queried_tokens, x.num_preemptions, x.num_output_messages, x.num_output_steps,
           x.step_seconds, x.compute_seconds, x.world_size, x.num_experts, x.expert_load,
           x.expert_remote, x.expert_imbalance, x.replicated_experts, x.expert_replans,
           x.spec_num_drafts, x.spec_num_draft_tokens, x.spec_num_accepted_tokens,
           x.spec_drafts_per_position, x.spec_accepted_per_position, x.spec_proposed_ahead,
           x.spec_used_ahead, x.spec_draft_error, x.stopped_serving);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ExpertStats& x) {
  return f(caf::meta::type_name("ExpertStats"), x.num_experts, x.load, x.remote, x.imbalance,
           x.replicated, x.replans);
}

// What a remote worker is started with: a WorkerSpec without what cannot
// cross processes (its model and group, which the rank has of its own).
struct RemoteWorkerArgs {
  int32_t rank = 0;
  int32_t num_blocks = 0;
  int32_t block_size = 16;
  int32_t num_host_blocks = 0;
  int32_t placement = 0;  // PlacementKind
  int32_t tensor_parallel_size = 1;
  int32_t kv_cache_dtype = 0;  // DType
  bool collectives = false;    // the rank joins the group (MoE or tensor parallel)
  caf::actor_addr scheduler;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RemoteWorkerArgs& x) {
  return f(caf::meta::type_name("hive::RemoteWorkerArgs"), x.rank, x.num_blocks, x.block_size,
           x.num_host_blocks, x.placement, x.tensor_parallel_size, x.kv_cache_dtype, x.collectives,
           x.scheduler);
}

}  // namespace hive
