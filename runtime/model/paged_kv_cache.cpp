#include "runtime/model/paged_kv_cache.hpp"

#include "base/error.hpp"
#include "kernels/kv_quant.hpp"

namespace hive {

PagedKVCache::PagedKVCache(Backend& backend, const ModelConfig& config, int32_t num_blocks,
                           int32_t block_size, int32_t num_host_blocks, DType dtype)
    : backend_(backend),
      num_blocks_(num_blocks),
      block_size_(block_size),
      num_host_blocks_(num_host_blocks),
      dtype_(dtype),
      block_elems_(int64_t{block_size} * config.cache_heads() *
                   kv_row_elems(dtype, config.cache_head_dim())) {
  check(num_blocks >= 2 && block_size >= 1 && num_host_blocks >= 0,
        "paged KV cache: need >= 2 blocks of >= 1 token (got ", num_blocks, " blocks of ",
        block_size, ", ", num_host_blocks, " host blocks)");
  check(is_kv_cache_dtype(dtype), "paged KV cache: dtype f32, bf16, i8 or f8_e4m3 (got ",
        dtype_name(dtype), ")");
  check(backend.takes_kv_cache_dtype(dtype), "paged KV cache: the ", backend.name(),
        " backend does not take a ", dtype_name(dtype),
        " KV cache; use --kv-cache-dtype bf16 or f32");
  check(
      !is_kv_quantized(dtype) || !config.mla, "paged KV cache: a ", dtype_name(dtype),
      " KV cache is not supported for MLA models (latent rows); use --kv-cache-dtype bf16 or f32");
  const std::initializer_list<int64_t> shape = {num_blocks, block_size, config.cache_heads(),
                                                kv_row_elems(dtype, config.cache_head_dim())};
  const auto host_bytes = static_cast<size_t>(num_host_blocks * block_elems_) * dtype_size(dtype);
  for (int64_t layer = 0; layer < config.num_layers; ++layer) {
    keys_.emplace_back(backend, dtype, shape);
    host_keys_.emplace_back(new std::byte[host_bytes]);
    if (!config.cache_has_values()) continue;
    values_.emplace_back(backend, dtype, shape);
    host_values_.emplace_back(new std::byte[host_bytes]);
  }
}

int64_t PagedKVCache::bytes_per_block() const {
  const int64_t tensors = values_.empty() ? 1 : 2;
  return tensors * num_layers() * block_elems_ * static_cast<int64_t>(dtype_size(dtype_));
}

Tensor PagedKVCache::host_block(const std::unique_ptr<std::byte[]>& layer, int32_t block) const {
  const Tensor& like = keys_.front().tensor();
  const auto offset = static_cast<size_t>(block * block_elems_) * dtype_size(dtype_);
  return Tensor::view(layer.get() + offset, dtype_, {1, block_size_, like.shape[2], like.shape[3]});
}

void PagedKVCache::check_ids(std::span<const BlockCopy> copies, int32_t src_blocks,
                             int32_t dst_blocks, const char* what) const {
  for (const BlockCopy& c : copies)
    check(c.src > 0 && c.src < src_blocks && c.dst > 0 && c.dst < dst_blocks, "paged KV cache ",
          what, ": block copy ", c.src, " -> ", c.dst, " outside [1, ", src_blocks, ") -> [1, ",
          dst_blocks, ")");
}

void PagedKVCache::copy_blocks(std::span<const BlockCopy> copies) {
  check_ids(copies, num_blocks_, num_blocks_, "copy");
  for (const BlockCopy& c : copies) {
    for (size_t layer = 0; layer < keys_.size(); ++layer) {
      backend_.copy(keys_[layer].tensor().rows(c.dst, 1), keys_[layer].tensor().rows(c.src, 1));
      if (has_values())
        backend_.copy(values_[layer].tensor().rows(c.dst, 1),
                      values_[layer].tensor().rows(c.src, 1));
    }
  }
}

void PagedKVCache::swap_out(std::span<const BlockCopy> copies) {
  check_ids(copies, num_blocks_, num_host_blocks_, "swap out");
  for (const BlockCopy& c : copies) {
    for (size_t layer = 0; layer < keys_.size(); ++layer) {
      backend_.copy(host_block(host_keys_[layer], c.dst), keys_[layer].tensor().rows(c.src, 1));
      if (has_values())
        backend_.copy(host_block(host_values_[layer], c.dst),
                      values_[layer].tensor().rows(c.src, 1));
    }
  }
}

void PagedKVCache::swap_in(std::span<const BlockCopy> copies) {
  check_ids(copies, num_host_blocks_, num_blocks_, "swap in");
  for (const BlockCopy& c : copies) {
    for (size_t layer = 0; layer < keys_.size(); ++layer) {
      backend_.copy(keys_[layer].tensor().rows(c.dst, 1), host_block(host_keys_[layer], c.src));
      if (has_values())
        backend_.copy(values_[layer].tensor().rows(c.dst, 1),
                      host_block(host_values_[layer], c.src));
    }
  }
}

}  // namespace hive
