// The AVX2 GEMM kernel (gemm_kernels.hpp): the AVX-512 kernel's tiles at
// half the width. A 16-lane accumulator is two ymm registers (lanes 0-7 and
// 8-15), so the reduction order, and the bits, are the AVX-512 kernel's.
// Register tiles of 2 rows by 2 weight rows (8 accumulators of the 16
// registers); a last partial chunk goes through zero-padded stack copies.
//
// Moves: as the AVX-512 kernel; its peak is half (2 x 8 FMAs per cycle).
//
// Compiled with -mavx2 -mfma -mf16c; includes nothing but intrinsics and
// gemm_kernels.hpp, and keeps every helper internal (see gemm_avx512.cpp).
#include "kernels/cpu/gemm_kernels.hpp"

#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics initialise their "undefined" vectors from
// themselves (`__m512 __Y = __Y;`), which -Wuninitialized reports at every
// use (GCC bug 105593, fixed in 13); only the header is exempted.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

namespace hive::cpu {

namespace {

constexpr int kLanes = 16;
constexpr int kTileRows = 2, kTileColumns = 2;

struct Half16 {  // one 16-lane vector as two halves
  __m256 lo, hi;
};

struct F32Weights {
  using Element = float;
  static Half16 load(const float* w) { return {_mm256_loadu_ps(w), _mm256_loadu_ps(w + 8)}; }
  static float scalar(float w) { return w; }
};

struct Bf16Weights {
  using Element = uint16_t;
  static __m256 widen(__m128i bits) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
  }
  static Half16 load(const uint16_t* w) {
    return {widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w))),
            widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 8)))};
  }
  static float scalar(uint16_t w) {
    return _mm_cvtss_f32(_mm_castsi128_ps(_mm_cvtsi32_si128(static_cast<int>(w) << 16)));
  }
};

struct F16Weights {
  using Element = uint16_t;
  static Half16 load(const uint16_t* w) {
    return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w))),
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 8)))};
  }
  static float scalar(uint16_t w) { return _cvtsh_ss(w); }
};

Half16 load_x(const float* x) {
  return {_mm256_loadu_ps(x), _mm256_loadu_ps(x + 8)};
}

Half16 fma(Half16 a, Half16 b, Half16 acc) {
  return {_mm256_fmadd_ps(a.lo, b.lo, acc.lo), _mm256_fmadd_ps(a.hi, b.hi, acc.hi)};
}

// Lanes folded in halves: l + 8 onto l, + 4, + 2, + 1 (the reference's order).
float fold(Half16 v) {
  const __m256 s8 = _mm256_add_ps(v.lo, v.hi);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

template <int R, int C, class W>
void tile(const float* x, const typename W::Element* w, int64_t k, const float* bias, float* out,
          int64_t out_stride) {
  Half16 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  int64_t p = 0;
  for (; p + kLanes <= k; p += kLanes) {
    Half16 wv[C];
    for (int c = 0; c < C; ++c) {
      // The next tile's weight rows, a tile ahead (see gemm_avx512.cpp).
      _mm_prefetch(reinterpret_cast<const char*>(w + (C + c) * k + p), _MM_HINT_T0);
      wv[c] = W::load(w + c * k + p);
    }
    for (int r = 0; r < R; ++r) {
      const Half16 xv = load_x(x + r * k + p);
      for (int c = 0; c < C; ++c) acc[r][c] = fma(xv, wv[c], acc[r][c]);
    }
  }
  if (p < k) {
    // Zero-padded copies: zeros add exactly nothing (see gemm_avx512.cpp).
    alignas(32) float wpad[C][kLanes] = {}, xpad[kLanes] = {};
    for (int c = 0; c < C; ++c)
      for (int64_t q = p; q < k; ++q) wpad[c][q - p] = W::scalar(w[c * k + q]);
    for (int r = 0; r < R; ++r) {
      for (int64_t q = p; q < k; ++q) xpad[q - p] = x[r * k + q];
      const Half16 xv = load_x(xpad);
      for (int c = 0; c < C; ++c) acc[r][c] = fma(xv, F32Weights::load(wpad[c]), acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c)
      out[r * out_stride + c] = fold(acc[r][c]) + (bias ? bias[c] : 0.0f);
}

template <class W>
void columns(const GemmArgs& a, const typename W::Element* w, int64_t begin, int64_t end) {
  const int64_t k = a.k, n = a.n;
  for (int64_t i = 0; i < a.m; i += kTileRows) {
    const bool two_rows = a.m - i >= 2;
    for (int64_t j = begin; j < end; j += kTileColumns) {
      const bool two_columns = end - j >= 2;
      const float* x = a.x + i * k;
      const typename W::Element* wj = w + (j - begin) * k;
      const float* bias = a.bias ? a.bias + j : nullptr;
      float* out = a.out + i * n + j;
      if (two_rows && two_columns)
        tile<2, 2, W>(x, wj, k, bias, out, n);
      else if (two_rows)
        tile<2, 1, W>(x, wj, k, bias, out, n);
      else if (two_columns)
        tile<1, 2, W>(x, wj, k, bias, out, n);
      else
        tile<1, 1, W>(x, wj, k, bias, out, n);
    }
  }
}

template <class W>
void widen(const typename W::Element* src, int64_t count, float* dst) {
  int64_t p = 0;
  for (; p + kLanes <= count; p += kLanes) {
    const Half16 v = W::load(src + p);
    _mm256_storeu_ps(dst + p, v.lo);
    _mm256_storeu_ps(dst + p + 8, v.hi);
  }
  for (; p < count; ++p) dst[p] = W::scalar(src[p]);
}

template <class W>
void run(const GemmArgs& a, int64_t begin, int64_t end, float* scratch) {
  const auto* w = static_cast<const typename W::Element*>(a.w) + begin * a.k;
  if (scratch != nullptr) {
    widen<W>(w, (end - begin) * a.k, scratch);
    return columns<F32Weights>(a, scratch, begin, end);
  }
  columns<W>(a, w, begin, end);
}

}  // namespace

void gemm_columns_avx2(const GemmArgs& args, int64_t column_begin, int64_t column_end,
                       float* scratch) {
  switch (args.weights) {
    case GemmWeights::f32:
      return run<F32Weights>(args, column_begin, column_end, nullptr);
    case GemmWeights::bf16:
      return run<Bf16Weights>(args, column_begin, column_end, scratch);
    case GemmWeights::f16:
      return run<F16Weights>(args, column_begin, column_end, scratch);
  }
}

}  // namespace hive::cpu

#endif  // __x86_64__
