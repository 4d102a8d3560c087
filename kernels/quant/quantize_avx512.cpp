// quantize.hpp's activation quantizers, Q8_0 and Q8_K, on AVX-512: the bits
// of the scalar code, 16 values per operation (a prefill of 512 tokens
// quantizes every matmul's activations, and the scalar loops showed in its
// profile). Built with its own -m flags and called only where the CPU has
// AVX-512 (quantize.cpp); it holds no inline code shared with other files.
#if defined(__x86_64__)
#include <cstdint>
#include <cstring>

#include "kernels/cpu/intrinsics.hpp"
#include "kernels/quant/quantize_simd.hpp"

namespace hive {

namespace {

inline uint16_t to_half(float value) {  // round to nearest even, as f32_to_f16
  return static_cast<uint16_t>(
      _mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(value), _MM_FROUND_TO_NEAREST_INT), 0));
}

// round(v) half away from zero, as std::round: the truncation plus one step
// away from zero where the dropped part is at least a half (v - trunc(v) is
// exact).
inline __m512 round_away(__m512 v) {
  const __m512 truncated = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512 rest = _mm512_sub_ps(v, truncated);
  const __m512 sign = _mm512_and_ps(v, _mm512_set1_ps(-0.0f));
  const __mmask16 up = _mm512_cmp_ps_mask(_mm512_abs_ps(rest), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  return _mm512_mask_add_ps(truncated, up, truncated, _mm512_or_ps(_mm512_set1_ps(1.0f), sign));
}

}  // namespace

void quantize_row_q8_0_avx512(const float* x, int64_t k, BlockQ8_0* out) {
  for (int64_t b = 0; b < k / 32; ++b, x += 32) {
    const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
    // max ignores a NaN as std::max(amax, |x|) does: the second operand wins.
    const float amax = _mm512_reduce_max_ps(
        _mm512_max_ps(_mm512_abs_ps(v1), _mm512_max_ps(_mm512_abs_ps(v0), _mm512_setzero_ps())));
    const float d = amax / 127.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].d = to_half(d);
    const __m512 scale = _mm512_set1_ps(inverse);
    const __m512i q0 = _mm512_cvttps_epi32(round_away(_mm512_mul_ps(v0, scale)));
    const __m512i q1 = _mm512_cvttps_epi32(round_away(_mm512_mul_ps(v1, scale)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out[b].qs), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out[b].qs + 16), _mm512_cvtepi32_epi8(q1));
  }
}

void quantize_row_q8_k_avx512(const float* x, int64_t k, BlockQ8_K* out) {
  for (int64_t b = 0; b < k / 256; ++b, x += 256) {
    BlockQ8_K& block = out[b];
    __m512 v[16];
    __m512 amax = _mm512_setzero_ps();
    for (int g = 0; g < 16; ++g) {
      v[g] = _mm512_loadu_ps(x + 16 * g);
      amax = _mm512_max_ps(_mm512_abs_ps(v[g]), amax);
    }
    // The first value of the largest magnitude, as signed_max's strict >.
    const __m512 largest = _mm512_set1_ps(_mm512_reduce_max_ps(amax));
    float max = 0.0f;
    for (int g = 0; g < 16; ++g) {
      const __mmask16 at = _mm512_cmp_ps_mask(_mm512_abs_ps(v[g]), largest, _CMP_EQ_OQ);
      if (at) {
        max = x[16 * g + __builtin_ctz(at)];
        break;
      }
    }
    if (max == 0.0f) {
      std::memset(&block, 0, sizeof(block));
      continue;
    }
    const float inverse = -127.0f / max;
    const __m512 scale = _mm512_set1_ps(inverse);
    for (int g = 0; g < 16; ++g) {
      // lrint under the default rounding mode: to nearest even.
      const __m512i q =
          _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(scale, v[g])), _mm512_set1_epi32(127));
      // The sums of the stored int8 quants, as the scalar code's: an
      // overflowing 1 / d leaves INT_MIN in q, which narrows to 0.
      const __m128i stored = _mm512_cvtepi32_epi8(q);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(block.qs + 16 * g), stored);
      block.bsums[g] = static_cast<int16_t>(_mm512_reduce_add_epi32(_mm512_cvtepi8_epi32(stored)));
    }
    block.d = 1.0f / inverse;
  }
}

}  // namespace hive
#endif  // __x86_64__
