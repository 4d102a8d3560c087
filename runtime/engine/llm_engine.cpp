#include "runtime/engine/llm_engine.hpp"

#include <algorithm>
#include <map>

#include "base/error.hpp"
#include "runtime/engine/step_cost_probe.hpp"
#include "runtime/model/tensor_parallel.hpp"

namespace hive {

EngineCoreConfig engine_core_config(const Model& model, const EngineConfig& config, int world_size,
                                    int tensor_parallel_size, const Model* draft_model) {
  check(world_size >= 1, "world_size must be >= 1 (got ", world_size, ")");
  check(tensor_parallel_size == 1 || tensor_parallel_size == world_size, "tensor_parallel_size ",
        tensor_parallel_size, " must be 1 or world_size (", world_size, ")");
  // In-process ranks share the model's backend (the host's memory, or one
  // GPU's): each gets 1/world_size of its memory, so a memory fraction holds
  // for the whole process. A budget in bytes is per rank, as it would be per
  // device. A tensor-parallel rank's blocks hold only its share of the KV
  // heads. The weights are loaded, so the free memory is what is left
  // after them; a pool larger than every sequence at full length would sit
  // idle, so a fraction stops there.
  const ModelConfig& c = model.config();
  const int64_t target_bytes_per_block = kv_bytes_per_block(
      tensor_parallel_config(c, tensor_parallel_size), config.block_size, config.kv_cache_dtype);
  // A draft model's pool (DraftModelDrafter) has as many blocks, one pool
  // per data-parallel rank: a tensor-parallel rank's share is 1/tp of it.
  // It comes out of a share of the free memory; a budget in bytes is the
  // target's pool, as given.
  int64_t draft_bytes_per_block = 0;
  if (draft_model && config.kv_budget.bytes == 0) {
    const int64_t draft_pool_block =
        kv_bytes_per_block(draft_model->config(), config.block_size, config.kv_cache_dtype);
    draft_bytes_per_block = (draft_pool_block + tensor_parallel_size - 1) / tensor_parallel_size;
  }
  const int64_t bytes_per_block = target_bytes_per_block + draft_bytes_per_block;
  const int64_t max_model_len = config.scheduler.max_model_len > 0 ? config.scheduler.max_model_len
                                                                   : c.max_position_embeddings;
  KVMemory memory;
  memory.device_bytes = model.backend().memory_bytes() / world_size;
  memory.free_bytes =
      config.kv_budget.bytes > 0 ? 0 : model.backend().free_memory_bytes() / world_size;
  memory.useful_bytes = kv_useful_bytes(config.scheduler.max_num_seqs, max_model_len,
                                        config.block_size, bytes_per_block);
  const int64_t pool_bytes = kv_pool_bytes(config.kv_budget, memory);
  EngineCoreConfig core;
  KVCacheConfig& kv = core.kv_cache;
  kv.block_size = config.block_size;
  kv.num_device_blocks = num_kv_blocks(pool_bytes, bytes_per_block);
  kv.num_host_blocks = num_swap_blocks(config.swap_space_bytes, target_bytes_per_block);
  kv.enable_prefix_caching = config.enable_prefix_caching;
  kv.sliding_window = c.sliding_window;
  core.scheduler = config.scheduler;
  if (core.scheduler.max_model_len == 0) core.scheduler.max_model_len = c.max_position_embeddings;
  if (core.scheduler.eos_token_ids.empty())
    for (const int64_t id : c.eos_token_ids)
      core.scheduler.eos_token_ids.push_back(static_cast<int32_t>(id));
  core.num_ranks = world_size / tensor_parallel_size;
  core.vocab_size = c.vocab_size;
  core.speculative = config.speculative;
  return core;
}

LLMEngine::LLMEngine(Model& model, const EngineConfig& config) : model_(model) {
  if (config.speculative.method == SpeculativeMethod::draft_model)
    draft_model_ = std::make_unique<Model>(config.speculative.draft_model, model.backend(),
                                           model.load_options());
  const EngineCoreConfig core = engine_core_config(model, config, 1, 1, draft_model_.get());
  const KVCacheConfig& kv = core.kv_cache;
  kv_cache_ =
      std::make_unique<PagedKVCache>(model.backend(), model.config(), kv.num_device_blocks,
                                     kv.block_size, kv.num_host_blocks, config.kv_cache_dtype);
  EngineCoreConfig with_cost = core;
  if (draft_model_) {
    drafter_ = std::make_unique<DraftModelDrafter>(
        *draft_model_, DraftModelConfig{kv.block_size, kv.num_device_blocks, config.kv_cache_dtype},
        model.config().vocab_size);
  }
  if (config.speculative.enabled() && config.speculative.adaptive)
    with_cost.spec_cost = measure_spec_cost(model, draft_model_.get(), config.kv_cache_dtype);
  core_ = std::make_unique<EngineCore>(with_cost);
  runner_ = std::make_unique<ModelRunner>(model, *kv_cache_);
  if (drafter_) core_->set_drafter(0, drafter_.get());
}

void LLMEngine::add_request(Request request) {
  core_->add_request(std::move(request));
}

std::vector<SequenceOutput> LLMEngine::step() {
  // Forced: a step that runs nothing still returns the aborted sequences.
  const CoreStep step = *core_->next_step(/*force=*/true);
  std::vector<SampledToken> sampled;
  last_tokens_.clear();
  try {
    sampled = runner_->run(step.plans.front());
  } catch (...) {
    // The plan's bookkeeping ran ahead of K/V that was never written (blocks
    // allocated and cached, forked samples counted as computed). As when the
    // actor engine replaces a failed worker, every unfinished sequence is
    // computed again from its tokens, on an empty cache and a fresh runner
    // (samplers resume from their sample counts); the caller may step again.
    core_->recompute_all();
    runner_ = std::make_unique<ModelRunner>(model_, *kv_cache_);
    throw;
  }
  std::vector<std::vector<SampledToken>> per_rank;
  per_rank.push_back(std::move(sampled));
  CoreEvents events = core_->complete_step(step.id, std::move(per_rank));
  last_tokens_ = std::move(events.tokens);
  std::vector<SequenceOutput> finished;
  for (FinishedSample& done : events.finished) finished.push_back(std::move(done.output));
  return finished;
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
    for (const std::string& id : order) core_->abort_request(id);
    core_->take_aborted();
    throw;
  }
  std::map<std::string, std::vector<SequenceOutput>> done;
  try {
    while (has_unfinished())
      for (SequenceOutput& out : step()) done[out.request_id].push_back(std::move(out));
  } catch (...) {
    // A failed step fails the batch: none of it stays queued.
    for (const std::string& id : order) core_->abort_request(id);
    core_->take_aborted();
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
  const int64_t pool = int64_t{kv_cache_manager().device_pool().num_allocatable_blocks()} *
                       kv_cache_manager().config().block_size;
  const int64_t context = model_.config().max_position_embeddings;
  return context > 0 ? std::min(pool, context) : pool;
}

EngineStats LLMEngine::stats() const {
  EngineStats s;
  s.scheduler = scheduler().stats();
  s.kv_cache = kv_cache_manager().stats();
  s.num_device_blocks = kv_cache_->num_blocks();
  s.num_host_blocks = kv_cache_->num_host_blocks();
  s.bytes_per_block = kv_cache_->bytes_per_block();
  return s;
}

}  // namespace hive
