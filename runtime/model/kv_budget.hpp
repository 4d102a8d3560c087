#pragma once
// How many KV-cache blocks a memory budget buys. Budgets, not hopes: the pool
// is sized once, before anything runs, from the model's KV bytes per token:
//
//   bytes per token = 2 (K and V) x layers x kv_heads x row bytes
//   row bytes       = head_dim x 2 (bf16) or 4 (f32), or head_dim + 4 for
//                     int8/fp8 (one-byte codes and an f32 scale, kv_quant.hpp)
//   bytes per block = block_size x bytes per token
//   blocks          = floor(budget / bytes per block)     (one is the null block)
//
// The budget is either a byte count, or (the default) a fraction of the
// memory free once the weights are loaded, capped at what the scheduler's
// limits could ever fill (docs/design/model.md, "The KV budget").
#include <cstdint>
#include <string_view>

#include "kernels/cpu/cpu_backend.hpp"  // host_memory_bytes
#include "runtime/loader/model_config.hpp"

namespace hive {

// What the KV cache stores by default: bf16 holds twice the tokens of f32 in
// the same bytes; attention still accumulates in f32 (docs/design/model.md).
inline constexpr DType kDefaultKVCacheDType = DType::bf16;

// "f32", "bf16", "int8" (DType::i8) or "fp8" (DType::f8_e4m3) as a cache
// dtype; throws naming `what` otherwise.
DType parse_kv_cache_dtype(std::string_view name, std::string_view what);

// vLLM's gpu_memory_utilization, of the memory that is free: the rest is
// left for activations, workspace and whatever else runs there.
inline constexpr double kDefaultKVMemoryFraction = 0.9;

struct KVBudget {
  int64_t bytes = 0;                                  // > 0: exactly this much for the KV pool
  double memory_fraction = kDefaultKVMemoryFraction;  // else: this share of the free memory
};

// What a budget is measured against, for one rank.
struct KVMemory {
  int64_t device_bytes = 0;  // the device's memory: more is an error
  int64_t free_bytes = 0;    // free now, the weights loaded: a fraction's base
  int64_t useful_bytes = 0;  // all sequences at full length: a fraction's ceiling
};

// Bytes of one block of the paged cache (K and V of every layer, stored as
// `dtype`: f32, bf16, or i8/f8_e4m3 rows with their scales).
int64_t kv_bytes_per_block(const ModelConfig& config, int32_t block_size, DType dtype);

// The KV pool's bytes under `budget`: its bytes, or memory_fraction of
// memory.free_bytes but no more than memory.useful_bytes. Throws when that
// is nothing, or bytes exceed the device.
int64_t kv_pool_bytes(const KVBudget& budget, const KVMemory& memory);

// Bytes that max_num_seqs sequences of max_model_len tokens fill, in blocks
// of bytes_per_block, the null block included; no ceiling when
// max_model_len is 0 (unknown) or either limit is not >= 1.
int64_t kv_useful_bytes(int64_t max_num_seqs, int64_t max_model_len, int32_t block_size,
                        int64_t bytes_per_block);

// Blocks of host swap space in `swap_bytes` (0: no swapping). Throws when
// that is more than this machine's memory.
int32_t num_swap_blocks(int64_t swap_bytes, int64_t bytes_per_block);

// Blocks that fit in `pool_bytes`, the null block included; throws below 2.
int32_t num_kv_blocks(int64_t pool_bytes, int64_t bytes_per_block);

}  // namespace hive
