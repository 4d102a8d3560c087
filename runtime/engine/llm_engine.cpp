#include "runtime/engine/llm_engine.hpp"

#include <algorithm>
#include <map>

#include "kernels/error.hpp"
#include "runtime/model/model_stats.hpp"

namespace hive {

LLMEngine::LLMEngine(Model& model, const EngineConfig& config)
    : model_(model) {
  const ModelConfig& c = model.config();
  const int64_t bytes_per_block = kv_bytes_per_block(c, config.block_size, config.kv_cache_dtype);
  const int64_t weight_bytes = model_stats(c, model.weights()).weight_bytes;
  const int64_t pool_bytes =
      kv_pool_bytes(config.kv_budget, model.backend().memory_bytes(), weight_bytes);
  KVCacheConfig kv;
  kv.block_size = config.block_size;
  kv.num_device_blocks = num_kv_blocks(pool_bytes, bytes_per_block);
  kv.num_host_blocks = num_swap_blocks(config.swap_space_bytes, bytes_per_block);
  kv.enable_prefix_caching = config.enable_prefix_caching;
  kv.sliding_window = c.sliding_window;
  kv_cache_ =
      std::make_unique<PagedKVCache>(model.backend(), c, kv.num_device_blocks, kv.block_size,
                                     kv.num_host_blocks, config.kv_cache_dtype);
  kv_cache_manager_ = std::make_unique<KVCacheManager>(kv);
  SchedulerConfig scheduler = config.scheduler;
  if (scheduler.max_model_len == 0) scheduler.max_model_len = c.max_position_embeddings;
  if (scheduler.eos_token_ids.empty())
    for (const int64_t id : c.eos_token_ids)
      scheduler.eos_token_ids.push_back(static_cast<int32_t>(id));
  scheduler_ = std::make_unique<Scheduler>(scheduler, *kv_cache_manager_);
  runner_ = std::make_unique<ModelRunner>(model, *kv_cache_);
}

void LLMEngine::add_request(Request request) {
  const int64_t vocab = model_.config().vocab_size;
  for (const int32_t id : request.prompt_token_ids)
    check(id >= 0 && id < vocab, "request ", request.id, ": prompt token id ", id,
          " is out of range [0, ", vocab, ")");
  scheduler_->add_request(std::move(request));
}

std::vector<SequenceOutput> LLMEngine::step() {
  const StepPlan plan = scheduler_->schedule();
  std::vector<SampledToken> sampled;
  last_tokens_.clear();
  try {
    sampled = runner_->run(plan);
  } catch (...) {
    // The plan's bookkeeping ran ahead of K/V that was never written (blocks
    // allocated and cached, forked samples counted as computed). As when the
    // actor engine replaces a failed worker, every unfinished sequence is
    // computed again from its tokens, on an empty cache and a fresh runner
    // (samplers resume from their sample counts); the caller may step again.
    scheduler_->recompute_all();
    runner_ = std::make_unique<ModelRunner>(model_, *kv_cache_);
    throw;
  }
  // Named before update(), which forgets the sequences that finish.
  for (const SampledToken& token : sampled) {
    if (!token.error.empty() || !scheduler_->has_sequence(token.seq_id)) continue;
    const Sequence& seq = scheduler_->sequence(token.seq_id);
    last_tokens_.push_back({seq.request->id, seq.sample_index, token.token, token.logprobs});
  }
  return scheduler_->update(sampled);
}

std::vector<RequestOutput> LLMEngine::generate(std::vector<Request> requests) {
  // It steps until nothing is left and returns only its own requests: the
  // outputs of others would be lost.
  check(!has_unfinished(),
        "generate: requests added with add_request() are unfinished; step() them to the end "
        "first");
  std::vector<std::string> order;
  try {
    for (Request& request : requests) {
      add_request(request);
      order.push_back(request.id);
    }
  } catch (const Error&) {
    // All or nothing: a bad request leaves none of the batch queued.
    for (const std::string& id : order) scheduler_->abort_request(id);
    scheduler_->take_aborted();
    throw;
  }
  std::map<std::string, std::vector<SequenceOutput>> done;
  try {
    while (has_unfinished())
      for (SequenceOutput& out : step()) done[out.request_id].push_back(std::move(out));
  } catch (...) {
    // A failed step fails the batch: none of it stays queued.
    for (const std::string& id : order) scheduler_->abort_request(id);
    scheduler_->take_aborted();
    throw;
  }
  std::vector<RequestOutput> outputs;
  for (const std::string& id : order) {
    std::vector<SequenceOutput>& samples = done[id];
    std::sort(samples.begin(), samples.end(), [](const SequenceOutput& a, const SequenceOutput& b) {
      return a.sample_index < b.sample_index;
    });
    outputs.push_back({id, std::move(samples)});
  }
  return outputs;
}

int64_t LLMEngine::max_sequence_tokens() const {
  const int64_t pool = int64_t{kv_cache_manager_->device_pool().num_allocatable_blocks()} *
                       kv_cache_manager_->config().block_size;
  const int64_t context = model_.config().max_position_embeddings;
  return context > 0 ? std::min(pool, context) : pool;
}

EngineStats LLMEngine::stats() const {
  EngineStats s;
  s.scheduler = scheduler_->stats();
  s.kv_cache = kv_cache_manager_->stats();
  s.num_device_blocks = kv_cache_->num_blocks();
  s.num_host_blocks = kv_cache_->num_host_blocks();
  s.bytes_per_block = kv_cache_->bytes_per_block();
  return s;
}

}  // namespace hive
