#include "runtime/model/kv_budget.hpp"

#include <algorithm>
#include <limits>

#include "kernels/error.hpp"

namespace hive {

DType parse_kv_cache_dtype(std::string_view name, std::string_view what) {
  if (name == "f32") return DType::f32;
  if (name == "bf16") return DType::bf16;
  fail(what, ": expected f32 or bf16 (got '", name, "')");
}

int64_t kv_bytes_per_block(const ModelConfig& config, int32_t block_size, DType dtype) {
  check(block_size >= 1, "block_size must be >= 1 (got ", block_size, ")");
  check(dtype == DType::f32 || dtype == DType::bf16, "a KV cache is f32 or bf16 (got ",
        dtype_name(dtype), ")");
  return int64_t{block_size} * config.kv_bytes_per_token(static_cast<int64_t>(dtype_size(dtype)));
}

int64_t kv_pool_bytes(const KVBudget& budget, int64_t device_memory_bytes, int64_t weight_bytes) {
  if (budget.bytes > 0) {
    check(budget.bytes <= device_memory_bytes, "KV budget: ", budget.bytes,
          " bytes exceed the memory there is (", device_memory_bytes, " bytes)");
    return budget.bytes;
  }
  check(budget.memory_fraction > 0.0 && budget.memory_fraction <= 1.0,
        "KV budget: give bytes > 0 or a memory fraction in (0, 1] (got ", budget.bytes,
        " bytes, fraction ", budget.memory_fraction, ")");
  const auto share =
      static_cast<int64_t>(budget.memory_fraction * static_cast<double>(device_memory_bytes));
  check(share > weight_bytes, "KV budget: ", budget.memory_fraction, " of ", device_memory_bytes,
        " bytes is ", share, ", not more than the weights' ", weight_bytes, " bytes");
  return share - weight_bytes;
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
