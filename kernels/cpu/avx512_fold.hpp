#pragma once
// The AVX-512 GEMM kernels' last step (gemm_avx512.cpp, gemm_avx512_bf16.cpp):
// a tile row's 16-lane accumulators folded to outputs in the one order of
// gemm_kernels.hpp (l + 8 onto l, + 4, + 2, + 1), + bias.
//
// Only those two files include it, both built with AVX-512 flags; its
// functions are internal to each, so their AVX-512 code is never the copy
// that another file's call links to.
#if defined(__x86_64__)
#include "kernels/cpu/intrinsics.hpp"

namespace hive::cpu {
namespace {

// One accumulator.
inline float fold(__m512 v) {
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

// Four accumulators at once, the same adds lane for lane as four fold()
// calls, as one transposing tree: 9 shuffles and 5 adds where four folds
// take 16 and 16.
inline __m128 fold4(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
  // l + 8: a0's 8 sums in 128-bit blocks 0-1 and a1's in 2-3; a2, a3 alike.
  const __m512 h01 =
      _mm512_add_ps(_mm512_shuffle_f32x4(a0, a1, 0x44), _mm512_shuffle_f32x4(a0, a1, 0xee));
  const __m512 h23 =
      _mm512_add_ps(_mm512_shuffle_f32x4(a2, a3, 0x44), _mm512_shuffle_f32x4(a2, a3, 0xee));
  // l + 4: block b holds accumulator b's 4 sums.
  const __m512 q =
      _mm512_add_ps(_mm512_shuffle_f32x4(h01, h23, 0x88), _mm512_shuffle_f32x4(h01, h23, 0xdd));
  // l + 2, then l + 1, within each block: lane 4b is accumulator b's sum.
  const __m512 p = _mm512_add_ps(q, _mm512_permute_ps(q, 0xee));
  const __m512 s = _mm512_add_ps(p, _mm512_permute_ps(p, 0x55));
  return _mm512_castps512_ps128(
      _mm512_permutexvar_ps(_mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0), s));
}

template <int I, int C>
inline __m512 accumulator_or_zero(const __m512 (&acc)[C]) {
  if constexpr (I < C) {
    return acc[I];
  } else {
    return _mm512_setzero_ps();
  }
}

// out[c] = fold(acc[c]) + (bias ? bias[c] : 0) for c < C <= 4. The bias or
// zero is always added, as the one-at-a-time fold did (-0 + 0 is +0).
template <int C>
inline void store_folded(const __m512 (&acc)[C], const float* bias, float* out) {
  static_assert(C >= 1 && C <= 4);
  if constexpr (C == 1) {
    out[0] = fold(acc[0]) + (bias ? bias[0] : 0.0f);
  } else {
    const __mmask8 mask = static_cast<__mmask8>((1u << C) - 1);
    const __m128 sums =
        fold4(acc[0], acc[1], accumulator_or_zero<2>(acc), accumulator_or_zero<3>(acc));
    const __m128 add = bias ? _mm_maskz_loadu_ps(mask, bias) : _mm_setzero_ps();
    _mm_mask_storeu_ps(out, mask, _mm_add_ps(sums, add));
  }
}

}  // namespace
}  // namespace hive::cpu
#endif  // __x86_64__
