#pragma once
// Random ggml blocks for the quantized matmul benchmarks: random bytes, with
// finite f16 scales (and Q4_K / Q5_K / Q5_1 minimums) where each format
// keeps them, so no product is a NaN.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/dtype.hpp"
#include "kernels/quant/ggml_type.hpp"

namespace hive::bench {

// An [n, k] weight of `type`'s blocks.
inline std::vector<uint8_t> random_blocks(std::mt19937_64& rng, GgmlType type, int64_t n,
                                          int64_t k) {
  const GgmlTypeInfo info = ggml_type_info(type);
  std::vector<uint8_t> bytes(static_cast<size_t>(n * k / info.block_size * info.block_bytes));
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(byte(rng));
  const uint16_t scale = f32_to_f16(1e-3f);
  const size_t at = type == GgmlType::q6_k ? info.block_bytes - 2 : 0;
  const bool with_min = type == GgmlType::q4_k || type == GgmlType::q5_k || type == GgmlType::q5_1;
  for (size_t b = 0; b < bytes.size(); b += info.block_bytes) {
    std::memcpy(&bytes[b + at], &scale, 2);
    if (with_min) std::memcpy(&bytes[b + 2], &scale, 2);
  }
  return bytes;
}

}  // namespace hive::bench
