#pragma once
// PagedKVCache: the physical K/V storage of every layer, in blocks, on the
// model's backend, plus a host swap space of the same layout. Which block
// holds which tokens is KVCacheManager's business; this class only stores
// them and runs block copies.
//
//   per layer, keys and values:  [num_blocks, block_size, num_kv_heads, head_dim]
//   stored as bf16 (the default) or f32; as i8 or f8_e4m3 the last dimension
//   is head_dim + 4, each row's codes and its f32 scale (kernels/kv_quant.hpp),
//   so block copies and swaps move the scales with the codes
//
//   block table [ 7 | 2 | 9 ], block_size 4:  token at position p lives in
//   block table[p / 4], row p % 4; its slot is block * block_size + row, the
//   row index in the flat [num_blocks * block_size, num_kv_heads, head_dim] view.
//
//   host swap space, per layer:  [num_host_blocks, block_size, num_kv_heads, head_dim],
//   the same dtype
//
// A block copy moves one block of every layer's K and V.
//
// MLA models (config.mla) store one latent row per token and layer
// (mla_attention.hpp): keys [num_blocks, block_size, 1, kv_lora_rank +
// qk_rope_head_dim] and no value blocks; values(layer) is keys(layer).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kernels/buffer.hpp"
#include "runtime/core/kv_cache_manager.hpp"
#include "runtime/loader/model_config.hpp"
#include "runtime/model/kv_budget.hpp"

namespace hive {

class PagedKVCache {
 public:
  // Block counts include each pool's null block (see BlockPool). dtype: f32,
  // bf16, i8 or f8_e4m3 (the last two on a backend that takes them, not
  // for MLA).
  PagedKVCache(Backend& backend, const ModelConfig& config, int32_t num_blocks, int32_t block_size,
               int32_t num_host_blocks = 0, DType dtype = kDefaultKVCacheDType);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t num_host_blocks() const { return num_host_blocks_; }
  int32_t block_size() const { return block_size_; }
  DType dtype() const { return dtype_; }
  int64_t num_layers() const { return static_cast<int64_t>(keys_.size()); }
  // Bytes of one block over all layers, K and V (or MLA's latent rows).
  int64_t bytes_per_block() const;
  bool has_values() const { return !values_.empty(); }

  const Tensor& keys(int64_t layer) const { return keys_[static_cast<size_t>(layer)].tensor(); }
  const Tensor& values(int64_t layer) const {
    return (has_values() ? values_ : keys_)[static_cast<size_t>(layer)].tensor();
  }

  void copy_blocks(std::span<const BlockCopy> copies);  // device -> device (copy-on-write)
  void swap_out(std::span<const BlockCopy> copies);     // device -> host
  void swap_in(std::span<const BlockCopy> copies);      // host -> device

 private:
  Tensor host_block(const std::unique_ptr<std::byte[]>& layer, int32_t block) const;
  void check_ids(std::span<const BlockCopy> copies, int32_t src_blocks, int32_t dst_blocks,
                 const char* what) const;

  Backend& backend_;
  int32_t num_blocks_, block_size_, num_host_blocks_;
  DType dtype_;
  int64_t block_elems_;  // block_size * cache_heads * cache_head_dim
  std::vector<Buffer> keys_, values_;
  // Uninitialised, so pages are only touched when a block is swapped out: a
  // zero-filled swap space cost tens of milliseconds at start-up.
  std::vector<std::unique_ptr<std::byte[]>> host_keys_, host_values_;
};

}  // namespace hive
