#include "runtime/model/kv_budget.hpp"

#include <algorithm>
#include <limits>

#include "base/error.hpp"
#include "kernels/kv_quant.hpp"

namespace hive {

DType parse_kv_cache_dtype(std::string_view name, std::string_view what) {
  if (name == "f32") return DType::f32;
  if (name == "bf16") return DType::bf16;
  if (name == "int8") return DType::i8;
  if (name == "fp8") return DType::f8_e4m3;
  fail(what, ": expected f32, bf16, int8 or fp8 (got '", name, "')");
}

int64_t kv_bytes_per_block(const ModelConfig& config, int32_t block_size, DType dtype) {
  check(block_size >= 1, "block_size must be >= 1 (got ", block_size, ")");
  check(is_kv_cache_dtype(dtype), "a KV cache is f32, bf16, i8 or f8_e4m3 (got ", dtype_name(dtype),
        ")");
  // A quantized row carries its scale (kv_quant.hpp): head_dim + 4 bytes.
  const int64_t row_bytes =
      kv_row_elems(dtype, config.cache_head_dim()) * static_cast<int64_t>(dtype_size(dtype));
  return int64_t{block_size} * (config.cache_has_values() ? 2 : 1) * config.num_layers *
         config.cache_heads() * row_bytes;
}

int64_t kv_pool_bytes(const KVBudget& budget, const KVMemory& memory) {
  if (budget.bytes > 0) {
    check(budget.bytes <= memory.device_bytes, "KV budget: ", budget.bytes,
          " bytes exceed the memory there is (", memory.device_bytes, " bytes)");
    return budget.bytes;
  }
  check(budget.memory_fraction > 0.0 && budget.memory_fraction <= 1.0,
        "KV budget: give bytes > 0 or a memory fraction in (0, 1] (got ", budget.bytes,
        " bytes, fraction ", budget.memory_fraction, ")");
  const auto share =
      static_cast<int64_t>(budget.memory_fraction * static_cast<double>(memory.free_bytes));
  check(share > 0, "KV budget: ", budget.memory_fraction, " of the ", memory.free_bytes,
        " bytes free after loading the weights is nothing");
  return std::min(share, memory.useful_bytes);
}

int64_t kv_useful_bytes(int64_t max_num_seqs, int64_t max_model_len, int32_t block_size,
                        int64_t bytes_per_block) {
  check(block_size >= 1 && bytes_per_block > 0, "KV budget: blocks of ", block_size,
        " tokens, ", bytes_per_block, " bytes each");
  // Limits < 1 are the scheduler's to reject, with its own message.
  constexpr int64_t kNoCeiling = std::numeric_limits<int64_t>::max();
  if (max_num_seqs < 1 || max_model_len < 1) return kNoCeiling;
  const int64_t blocks_per_seq = (max_model_len + block_size - 1) / block_size;
  if (blocks_per_seq > (kNoCeiling / bytes_per_block - 1) / max_num_seqs) return kNoCeiling;
  return (max_num_seqs * blocks_per_seq + 1) * bytes_per_block;
}

int32_t num_swap_blocks(int64_t swap_bytes, int64_t bytes_per_block) {
  if (swap_bytes == 0) return 0;
  check(swap_bytes > 0, "swap space must be >= 0 bytes (got ", swap_bytes, ")");
  const int64_t host = host_memory_bytes();
  check(swap_bytes <= host, "swap space: ", swap_bytes, " bytes exceed this machine's memory (",
        host, " bytes)");
  return num_kv_blocks(swap_bytes, bytes_per_block);
}

int32_t num_kv_blocks(int64_t pool_bytes, int64_t bytes_per_block) {
  check(bytes_per_block > 0, "KV budget: bytes per block must be > 0 (got ", bytes_per_block, ")");
  const int64_t blocks = pool_bytes / bytes_per_block;
  check(blocks >= 2, "KV budget: ", pool_bytes, " bytes hold ", blocks, " blocks of ",
        bytes_per_block, " bytes; need >= 2 (the null block and one more)");
  return static_cast<int32_t>(std::min<int64_t>(blocks, std::numeric_limits<int32_t>::max()));
}

}  // namespace hive
