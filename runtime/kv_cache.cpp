#include "runtime/kv_cache.hpp"

#include "kernels/error.hpp"

namespace hive {

ContiguousKVCache::ContiguousKVCache(Backend& backend, const ModelConfig& config,
                                     int64_t capacity)
    : capacity_(capacity) {
  check(capacity >= 1, "KV cache capacity must be >= 1 (got ", capacity, ")");
  for (int64_t layer = 0; layer < config.num_layers; ++layer) {
    keys_.emplace_back(backend, DType::f32, std::initializer_list<int64_t>{capacity, config.num_kv_heads, config.head_dim});
    values_.emplace_back(backend, DType::f32, std::initializer_list<int64_t>{capacity, config.num_kv_heads, config.head_dim});
  }
}

void ContiguousKVCache::advance(int64_t count) {
  check(count >= 0 && num_tokens_ + count <= capacity_, "KV cache: ", num_tokens_, " + ", count,
        " tokens exceed the capacity ", capacity_);
  num_tokens_ += count;
}

}  // namespace hive
