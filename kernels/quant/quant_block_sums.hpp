#pragma once
// The per-block step of quant_matmul.hpp's Q8_0-family order where one
// output's blocks lie in the lanes of vectors: their exact int32 totals
// gathered 8 blocks to a vector, then the blocks' fmas one after another.
// Internal to each kernel file that includes it (AVX2 and up), compiled for
// that file's ISA (gemm_kernels.hpp on why no shared inline code goes into
// an ISA file).
#include <cmath>
#include <cstdint>

#include "kernels/cpu/intrinsics.hpp"

namespace hive {
namespace {

// Lane t: the sum of v[t]'s 8 int32 lanes (integer adds: exact in any order).
inline __m256i block_totals(const __m256i (&v)[8]) {
  const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]), h23 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i h45 = _mm256_hadd_epi32(v[4], v[5]), h67 = _mm256_hadd_epi32(v[6], v[7]);
  // 128-bit halves: [v0, v1, v2, v3]'s sums of lanes 0-3, then of lanes 4-7.
  const __m256i q0 = _mm256_hadd_epi32(h01, h23), q1 = _mm256_hadd_epi32(h45, h67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(q0, q1, 0x20),
                          _mm256_permute2x128_si256(q0, q1, 0x31));
}

// The sum of v's 8 int32 lanes.
inline int32_t lane_total(__m256i v) {
  const __m128i four = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i two = _mm_add_epi32(four, _mm_unpackhi_epi64(four, four));
  return _mm_cvtsi128_si32(_mm_add_epi32(two, _mm_shuffle_epi32(two, 1)));
}

// s = fma(sums[t], d[t], s) for t = 0..7 in turn.
inline float fma_in_order(__m256 sums, __m256 d, float s) {
  alignas(32) float sum[8], scale[8];
  _mm256_store_ps(sum, sums);
  _mm256_store_ps(scale, d);
  for (int t = 0; t < 8; ++t) s = std::fma(sum[t], scale[t], s);
  return s;
}

// As fma_in_order, each block then adding its second term (Q5_1's minimum):
// s = fma(sums[t], d[t], s); s = fma(sums2[t], d2[t], s).
inline float fma_in_order(__m256 sums, __m256 d, __m256 sums2, __m256 d2, float s) {
  alignas(32) float sum[8], scale[8], sum2[8], scale2[8];
  _mm256_store_ps(sum, sums);
  _mm256_store_ps(scale, d);
  _mm256_store_ps(sum2, sums2);
  _mm256_store_ps(scale2, d2);
  for (int t = 0; t < 8; ++t) {
    s = std::fma(sum[t], scale[t], s);
    s = std::fma(sum2[t], scale2[t], s);
  }
  return s;
}

}  // namespace
}  // namespace hive
