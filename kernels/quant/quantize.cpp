#include "kernels/quant/quantize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/dtype.hpp"
#include "kernels/error.hpp"

namespace hive {

namespace {

void check_blocks(const char* what, int64_t k, int block_size) {
  check(k >= 0 && k % block_size == 0, what, ": k = ", k, " is not a multiple of the block size ",
        block_size);
}

// The element of largest magnitude (the first such), with its sign.
float signed_max(const float* x, int count) {
  float max = 0.0f, amax = 0.0f;
  for (int i = 0; i < count; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  return max;
}

}  // namespace

void quantize_row_q8_0(const float* x, int64_t k, BlockQ8_0* out) {
  check_blocks("quantize_row_q8_0", k, kQK);
  for (int64_t b = 0; b < k / kQK; ++b, x += kQK) {
    float amax = 0.0f;
    for (int i = 0; i < kQK; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].d = f32_to_f16(d);
    for (int i = 0; i < kQK; ++i) out[b].qs[i] = static_cast<int8_t>(std::round(x[i] * inverse));
  }
}

void quantize_row_q8_k(const float* x, int64_t k, BlockQ8_K* out) {
  check_blocks("quantize_row_q8_k", k, kQKK);
  for (int64_t b = 0; b < k / kQKK; ++b, x += kQKK) {
    BlockQ8_K& block = out[b];
    const float max = signed_max(x, kQKK);
    if (max == 0.0f) {
      std::memset(&block, 0, sizeof(block));
      continue;
    }
    const float inverse = -127.0f / max;
    for (int i = 0; i < kQKK; ++i)
      block.qs[i] = static_cast<int8_t>(std::min(127L, std::lrint(inverse * x[i])));
    for (int g = 0; g < kQKK / 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += block.qs[16 * g + i];
      block.bsums[g] = static_cast<int16_t>(sum);
    }
    block.d = 1.0f / inverse;
  }
}

void quantize_row_q4_0(const float* x, int64_t k, BlockQ4_0* out) {
  check_blocks("quantize_row_q4_0", k, kQK);
  for (int64_t b = 0; b < k / kQK; ++b, x += kQK) {
    const float d = signed_max(x, kQK) / -8.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].d = f32_to_f16(d);
    for (int i = 0; i < kQK / 2; ++i) {
      const auto low = std::min(15, static_cast<int>(static_cast<int8_t>(x[i] * inverse + 8.5f)));
      const auto high =
          std::min(15, static_cast<int>(static_cast<int8_t>(x[i + kQK / 2] * inverse + 8.5f)));
      out[b].qs[i] = static_cast<uint8_t>(low | high << 4);
    }
  }
}

}  // namespace hive
