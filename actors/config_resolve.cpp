// validate() and resolve() of the config tree (hive_config.hpp): the checks
// that span keys, and the values that follow from the model.
#include <initializer_list>

#include "actors/hive_config.hpp"
#include "base/error.hpp"

namespace hive {

namespace {

// "<source>: " of the first of `keys` with a recorded source, for errors
// about them; "" when all have their defaults.
std::string where(const HiveConfig& config, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    const auto it = config.sources.find(key);
    if (it != config.sources.end()) return it->second + ": ";
  }
  return "";
}

}  // namespace

int check_parallel_layout(const ParallelConfig& parallel, const std::string& where) {
  const int world = parallel.world_size, tp = parallel.tensor_parallel_size;
  const int ep = parallel.expert_parallel_size != 0 ? parallel.expert_parallel_size
                 : tp == 1                          ? world
                                                    : 1;
  check((tp == 1 && ep == world) || (tp == world && ep == 1), where, "world_size ", world,
        " with expert_parallel_size ", ep, " and tensor_parallel_size ", tp,
        ": the ranks are either data parallel with the experts spread over all of them "
        "(expert_parallel_size = world_size, tensor_parallel_size 1) or one tensor-parallel "
        "model (tensor_parallel_size = world_size, expert_parallel_size 1)");
  return ep;
}

void validate(const HiveConfig& config) {
  check_parallel_layout(config.parallel, where(config, {"parallel", "parallel.world_size",
                                                        "parallel.tensor_parallel_size",
                                                        "parallel.expert_parallel_size"}) +
                                             "parallel: ");
  const EngineConfig& engine = config.engine;
  check(engine.scheduler.preemption_mode != PreemptionMode::swap || engine.swap_space_bytes > 0,
        where(config, {"scheduler.preemption_mode"}),
        "scheduler.preemption_mode: swap needs kv_cache.swap_space (a host pool to swap to)");
  const SpeculativeConfig& spec = engine.speculative;
  const std::string at_spec = where(config, {"speculative.method", "speculative"});
  check(spec.method != SpeculativeMethod::draft_model || !spec.draft_model.empty(), at_spec,
        "speculative: method draft_model needs draft_model: DIR");
  check(spec.method != SpeculativeMethod::ngram || spec.draft_model.empty(), at_spec,
        "speculative: method ngram takes no draft_model");
  check(spec.ngram.min_n <= spec.ngram.max_n,
        where(config, {"speculative.ngram.min_n", "speculative.ngram.max_n", "speculative"}),
        "speculative.ngram: min_n (", spec.ngram.min_n, ") must not exceed max_n (",
        spec.ngram.max_n, ")");
}

void resolve(HiveConfig& config, const ModelConfig& model) {
  validate(config);
  ParallelConfig& parallel = config.parallel;
  if (parallel.expert_parallel_size == 0) {
    parallel.expert_parallel_size = check_parallel_layout(parallel, "");
    config.sources["parallel.expert_parallel_size"] = "derived: the parallel layout";
  }
  // Each expert-parallel rank holds at least one expert: more ranks than
  // experts would only fail in every worker's start, three times over.
  check(model.num_experts == 0 || parallel.tensor_parallel_size > 1 ||
            parallel.world_size <= model.num_experts,
        where(config, {"parallel.world_size"}), "expert parallelism over ", parallel.world_size,
        " ranks needs at least as many experts; the model has ", model.num_experts,
        " (parallel.world_size at most ", model.num_experts, ")");
  // The context length bounds every request; a longer limit would let a
  // request past the positions the model was trained for.
  SchedulerConfig& scheduler = config.engine.scheduler;
  const int64_t context = model.max_position_embeddings;
  if (scheduler.max_model_len == 0) {
    scheduler.max_model_len = context;
    config.sources["scheduler.max_model_len"] = "derived: the model's max_position_embeddings";
  }
  check(context == 0 || scheduler.max_model_len <= context,
        where(config, {"scheduler.max_model_len"}),
        "scheduler.max_model_len: must be at most the model's context length, "
        "max_position_embeddings ",
        context, " (got ", scheduler.max_model_len, ")");
  if (config.server.served_model_name.empty()) {
    config.server.served_model_name = config.model.lexically_normal().filename().string();
    config.sources["server.served_model_name"] = "derived: the model's file name";
  }
}

}  // namespace hive
