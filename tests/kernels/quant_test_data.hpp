#pragma once
// Random quantized weights for the quantized matmul's tests: Q8_0 and Q4_0
// quantized from normal floats, Q5_0 / Q5_1 and the K-quants as random bytes
// with finite f16 scales and mins (every quant pattern is valid).
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/dtype.hpp"
#include "kernels/quant/blocks.hpp"
#include "kernels/quant/ggml_type.hpp"
#include "kernels/quant/quantize.hpp"
#include "tests/common/random.hpp"

namespace hive::test {

inline constexpr GgmlType kQuantMatmulTypes[] = {GgmlType::q8_0, GgmlType::q4_0, GgmlType::q5_0,
                                                 GgmlType::q5_1, GgmlType::q4_k, GgmlType::q5_k,
                                                 GgmlType::q6_k};

inline std::string type_name(GgmlType type) {
  return std::string(ggml_type_info(type).name);
}

struct QuantWeights {
  GgmlType type;
  int64_t n, k;
  std::vector<uint8_t> bytes;  // n rows of k / block_size blocks
};

// A K-quant block's f16 scale: normal, about 1e-3, either sign.
inline uint16_t random_scale_bits(std::mt19937_64& rng) {
  std::normal_distribution<float> dist(0.0f, 1e-3f);
  return f32_to_f16(dist(rng));
}

inline QuantWeights random_quant_weights(std::mt19937_64& rng, GgmlType type, int64_t n,
                                         int64_t k) {
  const GgmlTypeInfo info = ggml_type_info(type);
  const int64_t row_blocks = k / info.block_size;
  QuantWeights w{type, n, k,
                 std::vector<uint8_t>(static_cast<size_t>(n * row_blocks * info.block_bytes))};
  if (type == GgmlType::q8_0 || type == GgmlType::q4_0) {
    const std::vector<float> values = random_floats(rng, static_cast<size_t>(n * k));
    for (int64_t j = 0; j < n; ++j) {
      uint8_t* row = w.bytes.data() + j * row_blocks * info.block_bytes;
      const float* x = values.data() + j * k;
      if (type == GgmlType::q8_0)
        quantize_row_q8_0(x, k, reinterpret_cast<BlockQ8_0*>(row));
      else
        quantize_row_q4_0(x, k, reinterpret_cast<BlockQ4_0*>(row));
    }
    return w;
  }
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : w.bytes) b = static_cast<uint8_t>(byte(rng));
  for (int64_t b = 0; b < n * row_blocks; ++b) {
    uint8_t* block = w.bytes.data() + b * info.block_bytes;
    const uint16_t d = random_scale_bits(rng), dmin = random_scale_bits(rng);
    if (type == GgmlType::q6_k) {
      std::memcpy(block + offsetof(BlockQ6_K, d), &d, 2);
    } else if (type == GgmlType::q5_0) {
      std::memcpy(block, &d, 2);
    } else {  // Q5_1, Q4_K, Q5_K: d, then the min or dmin
      std::memcpy(block, &d, 2);
      std::memcpy(block + 2, &dmin, 2);
    }
  }
  return w;
}

}  // namespace hive::test
