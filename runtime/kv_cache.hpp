#pragma once
// A contiguous KV cache for one sequence: per layer, K and V of shape
// [capacity, num_kv_heads, head_dim] f32. Token t of the sequence lives in
// row t. The paged cache (block tables over a shared pool) replaces this for
// batched serving; this one is the simple reference the model tests use.
#include <vector>

#include "kernels/buffer.hpp"
#include "runtime/model_config.hpp"

namespace hive {

class ContiguousKVCache {
 public:
  ContiguousKVCache(Backend& backend, const ModelConfig& config, int64_t capacity);

  int64_t capacity() const { return capacity_; }
  int64_t num_tokens() const { return num_tokens_; }
  // Called by the model after a forward pass has written `count` new tokens.
  void advance(int64_t count);
  void clear() { num_tokens_ = 0; }

  const Tensor& keys(int64_t layer) const { return keys_[static_cast<size_t>(layer)].tensor(); }
  const Tensor& values(int64_t layer) const {
    return values_[static_cast<size_t>(layer)].tensor();
  }

 private:
  int64_t capacity_;
  int64_t num_tokens_ = 0;
  std::vector<Buffer> keys_, values_;
};

}  // namespace hive
