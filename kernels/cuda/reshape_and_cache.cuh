#pragma once
// reshape_and_cache on the GPU: one block per token, its threads striding
// over the token's K and V rows, each element converted to the cache's
// dtype on store. Traffic per token: read 2 * row * 4 B, write 2 * row * 4
// (f32) or 2 (bf16) B; bandwidth-bound and a few KB per token, so it is
// negligible next to the layer's matmuls.
#include <cstdint>

#include <cuda_runtime.h>

namespace hive::cuda {

enum class CacheType { f32, bf16 };

struct ReshapeAndCacheParams {
  const float* k;               // [num_tokens, row]
  const float* v;               // [num_tokens, row]
  const int64_t* slot_mapping;  // [num_tokens], slots checked on the host
  void* k_blocks;               // [num_slots, row] of cache_type
  void* v_blocks;
  CacheType cache_type;
  int64_t num_tokens;
  int64_t row;  // num_kv_heads * head_dim
};

cudaError_t launch_reshape_and_cache(const ReshapeAndCacheParams& params, cudaStream_t stream);

}  // namespace hive::cuda
