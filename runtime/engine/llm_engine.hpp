#pragma once
// LLMEngine: the offline driver. It owns the KV pool (sized from a memory
// budget), an EngineCore (the scheduler, the KV-cache manager and the
// request table) with one rank and one step in flight, and the model
// runner, and runs requests to completion on the calling thread, no actors:
//
// With speculative decoding by a draft model it also owns the draft and its
// drafter, whose KV pool holds as many blocks as the target's.
//
//   step():  step = core.next_step()             which sequences, how many tokens
//            sampled = runner.run(step.plans[0])  block copies, forward, sampling
//            return core.complete_step(step, sampled)
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "runtime/core/kv_cache_manager.hpp"
#include "runtime/core/scheduler.hpp"
#include "runtime/engine/draft_model_drafter.hpp"
#include "runtime/engine/engine_config.hpp"
#include "runtime/engine/engine_core.hpp"
#include "runtime/model/kv_budget.hpp"
#include "runtime/model/model.hpp"
#include "runtime/model/model_runner.hpp"
#include "runtime/model/paged_kv_cache.hpp"

namespace hive {

// The engine core's configuration for `model` on `world_size` ranks that
// share its backend's memory, each holding 1/tensor_parallel_size of the KV
// heads: the KV pool per rank sized from config.kv_budget (a fraction of
// the backend's free memory, read here, once the model is loaded), the
// scheduler with the model's context length and eos ids. Both engines size
// their pools here. With a draft model (loaded first, so the free memory is
// what its weights leave), its KV pool of as many blocks per data-parallel
// rank comes out of the same share of the free memory; a budget in bytes
// is the target's pool alone, as given.
EngineCoreConfig engine_core_config(const Model& model, const EngineConfig& config,
                                    int world_size = 1, int tensor_parallel_size = 1,
                                    const Model* draft_model = nullptr);

// All samples of one request, by sample index.
struct RequestOutput {
  std::string request_id;
  std::vector<SequenceOutput> samples;
};

struct EngineStats {
  SchedulerStats scheduler;
  KVCacheStats kv_cache;
  int32_t num_device_blocks = 0;  // including the null block
  int32_t num_host_blocks = 0;
  int64_t bytes_per_block = 0;
  int64_t bytes_swapped() const {
    return (kv_cache.swapped_out_blocks + kv_cache.swapped_in_blocks) * bytes_per_block;
  }
};

class LLMEngine {
 public:
  // The model must outlive the engine.
  LLMEngine(Model& model, const EngineConfig& config);

  // Checks the prompt's token ids against the vocabulary, then queues it.
  void add_request(Request request);
  // Ends the request, or one of its samples, with `reason` (see Scheduler).
  void abort_request(const std::string& request_id, FinishReason reason = FinishReason::aborted,
                     std::optional<int> sample_index = std::nullopt) {
    core_->abort_request(request_id, reason, sample_index);
  }
  // One iteration; returns the sequences that finished in it.
  std::vector<SequenceOutput> step();
  // Also while a sequence aborted since the last step awaits its output.
  bool has_unfinished() const { return core_->has_unfinished() || core_->has_aborted(); }
  // Adds the requests and steps until all are done; outputs in request order.
  // Throws if requests added with add_request() are unfinished.
  std::vector<RequestOutput> generate(std::vector<Request> requests);

  // Expert parallelism for this engine's rank (see ModelRunner); every rank
  // of the group must then step together, idle or not.
  void set_expert_parallel(const ExpertParallelContext* ep) { runner_->set_expert_parallel(ep); }

  // The most tokens, prompt and output, one request can hold: the context,
  // or the KV pool when that is smaller.
  int64_t max_sequence_tokens() const;
  EngineStats stats() const;
  const Scheduler& scheduler() const { return core_->scheduler(0); }
  const KVCacheManager& kv_cache_manager() const { return core_->kv_cache(0); }
  // The draft model's drafter (speculative method draft_model), else null.
  const DraftModelDrafter* drafter() const { return drafter_.get(); }
  // The tokens the last step added to outputs, in sampling order (those of
  // sequences that finished in it included; a failed sample adds none).
  const std::vector<NewToken>& last_tokens() const { return last_tokens_; }

 private:
  Model& model_;
  std::unique_ptr<PagedKVCache> kv_cache_;
  std::unique_ptr<EngineCore> core_;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<Model> draft_model_;  // speculative method draft_model
  std::unique_ptr<DraftModelDrafter> drafter_;
  std::vector<NewToken> last_tokens_;
};

}  // namespace hive
