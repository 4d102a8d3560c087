#pragma once
// What one engine takes from the config tree (actors/hive_config.hpp): the
// kv_cache: section (flat here), the scheduler: and the speculative:
// sections. Both engines, the offline LLMEngine and the actor Engine, read
// it by const&; these defaults are the only ones for these keys.
#include <cstdint>

#include "kernels/dtype.hpp"
#include "runtime/core/scheduler.hpp"
#include "runtime/core/speculative_config.hpp"
#include "runtime/model/kv_budget.hpp"

namespace hive {

struct EngineConfig {
  // kv_cache:
  int32_t block_size = 16;                      // kv_cache.block_size
  KVBudget kv_budget;                           // memory_budget, else memory_fraction
  int64_t swap_space_bytes = 0;                 // host pool for swap preemption
  DType kv_cache_dtype = kDefaultKVCacheDType;  // f32 | bf16 | int8 | fp8
  bool enable_prefix_caching = true;
  SchedulerConfig scheduler;  // its eos_token_ids default to the model's
  SpeculativeConfig speculative;
};

}  // namespace hive
