// The AVX2 GEMM kernel (gemm_kernels.hpp): the AVX-512 kernel's tiles at
// half the width. A 16-lane accumulator is two ymm registers (lanes 0-7 and
// 8-15), so the reduction order, and the bits, are the AVX-512 kernel's.
// Below 4 rows: register tiles of 2 rows by 2 weight rows (8 accumulators
// of the 16 registers); a last partial chunk goes through zero-padded stack
// copies. From 4 rows (x_halves given): x and the block's weights are in the
// halves layout (gemm_kernels.hpp), and each half of the 16-lane
// accumulator is its own pass over k with tiles of 4 rows by 3 weight rows
// (12 accumulators, 3 weight and 1 x register): 12 FMAs per 7 loads instead
// of 8 per 8, and every load contiguous. The halves are then added lane by
// lane and folded as before, so the order, and the bits, are unchanged.
//
// Moves: as the AVX-512 kernel; its peak is half (2 x 8 FMAs per cycle).
//
// Compiled with -mavx2 -mfma -mf16c; includes nothing but intrinsics and
// gemm_kernels.hpp, and keeps every helper internal (see gemm_avx512.cpp).
#include "kernels/cpu/gemm_kernels.hpp"

#if defined(__x86_64__)
#include "kernels/cpu/intrinsics.hpp"

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
inline __attribute__((always_inline)) void tile(const float* x, const typename W::Element* w,
                                                int64_t k, const float* bias, float* out,
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
    for (int c = 0; c < C; ++c) out[r * out_stride + c] = fold(acc[r][c]) + (bias ? bias[c] : 0.0f);
}

// The tiles inlined: a call per tile cost its prologue and the
// accumulators' trip through the stack (see gemm_avx512_bf16.cpp).
template <class W>
__attribute__((noinline)) void columns(const GemmArgs& a, const typename W::Element* w,
                                       int64_t begin, int64_t end) {
  const int64_t k = a.k, n = a.n;
  for (int64_t i = 0; i < a.m; i += kTileRows) {
    const bool two_rows = a.m - i >= 2;
    const int64_t tile_columns = weight_rows_per_tile(a.m - i, kTileColumns);
    for (int64_t j = begin; j < end; j += tile_columns) {
      const bool two_columns = two_rows && end - j >= 2;
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

// The halves path (x_halves): one pass over a half of k16 for a tile of R x
// rows and C weight rows, each in the halves layout with stride k16.
// The accumulators are locals, copied out once: written through `result`
// in the loop, they would be stored at every step (result may alias x or w).
template <int R, int C>
inline __attribute__((always_inline)) void half_pass(const float* x, const float* w, int64_t k16,
                                                     int64_t half, __m256 (&result)[R][C]) {
  __m256 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  for (int64_t t = 0; t < half; t += 8) {
    __m256 wv[C];
    for (int c = 0; c < C; ++c) wv[c] = _mm256_loadu_ps(w + c * k16 + t);
    for (int r = 0; r < R; ++r) {
      const __m256 xv = _mm256_loadu_ps(x + r * k16 + t);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(xv, wv[c], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) result[r][c] = acc[r][c];
}

template <int R, int C>
inline __attribute__((always_inline)) void halves_tile(const float* x, const float* w, int64_t k16,
                                                       const float* bias, float* out,
                                                       int64_t out_stride) {
  const int64_t half = k16 / 2;
  __m256 lo[R][C], hi[R][C];
  half_pass<R, C>(x, w, k16, half, lo);
  half_pass<R, C>(x + half, w + half, k16, half, hi);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c)
      out[r * out_stride + c] = fold({lo[r][c], hi[r][c]}) + (bias ? bias[c] : 0.0f);
}

constexpr int kHalvesRows = 4, kHalvesColumns = 3;

// A strip of C weight rows against rows [0, rows) of x, kHalvesRows at a
// time, the last tile shorter. One call per strip with the tiles inlined,
// as gemm_avx512_bf16.cpp's row tiles (a call per tile cost its prologue and
// the accumulators' trip through the stack).
template <int C>
__attribute__((noinline)) void halves_strip(int64_t rows, const float* x, const float* w,
                                            int64_t k16, const float* bias, float* out,
                                            int64_t out_stride) {
  int64_t i = 0;
  for (; i + kHalvesRows <= rows; i += kHalvesRows)
    halves_tile<kHalvesRows, C>(x + i * k16, w, k16, bias, out + i * out_stride, out_stride);
  switch (rows - i) {
    case 3:
      return halves_tile<3, C>(x + i * k16, w, k16, bias, out + i * out_stride, out_stride);
    case 2:
      return halves_tile<2, C>(x + i * k16, w, k16, bias, out + i * out_stride, out_stride);
    case 1:
      return halves_tile<1, C>(x + i * k16, w, k16, bias, out + i * out_stride, out_stride);
    default:
      return;
  }
}

using HalvesStrip = void (*)(int64_t, const float*, const float*, int64_t, const float*, float*,
                             int64_t);
constexpr HalvesStrip kHalvesStrips[kHalvesColumns] = {halves_strip<1>, halves_strip<2>,
                                                       halves_strip<3>};

// Rows of x_halves per pass over the block's columns: with the block's
// weights (16 columns), they stay in L2 while every 3-column strip reads them.
constexpr int64_t kHalvesRowBytes = 192 << 10;

// The block's weights [begin, end) widened into the halves layout.
template <class W>
void widen_halves(const typename W::Element* w, int64_t k, int64_t columns, float* dst) {
  const int64_t k16 = (k + 15) / 16 * 16, half = k16 / 2;
  for (int64_t c = 0; c < columns; ++c, w += k, dst += k16) {
    int64_t p = 0;
    for (; p + kLanes <= k; p += kLanes) {
      const Half16 v = W::load(w + p);
      _mm256_storeu_ps(dst + p / 2, v.lo);
      _mm256_storeu_ps(dst + half + p / 2, v.hi);
    }
    for (int64_t q = p; q < k16; ++q) {  // the last chunk, zero-padded
      const float value = q < k ? W::scalar(w[q]) : 0.0f;
      const int64_t lane = q - p;
      (lane < 8 ? dst[p / 2 + lane] : dst[half + p / 2 + lane - 8]) = value;
    }
  }
}

void halves_columns(const GemmArgs& a, const float* w, int64_t begin, int64_t end) {
  const int64_t k16 = (a.k + 15) / 16 * 16;
  // No <algorithm> here: only intrinsics are included (see the top).
  const int64_t fitting = kHalvesRowBytes / (k16 * 4) / kHalvesRows * kHalvesRows;
  const int64_t block_rows = fitting > kHalvesRows ? fitting : kHalvesRows;
  for (int64_t i0 = 0; i0 < a.m; i0 += block_rows) {
    const int64_t i1 = i0 + block_rows < a.m ? i0 + block_rows : a.m;
    for (int64_t j = begin; j < end; j += kHalvesColumns) {
      const int64_t columns = end - j < kHalvesColumns ? end - j : kHalvesColumns;
      kHalvesStrips[columns - 1](i1 - i0, a.x_halves + i0 * k16, w + (j - begin) * k16, k16,
                                 a.bias ? a.bias + j : nullptr, a.out + i0 * a.n + j, a.n);
    }
  }
}

template <class W>
void run(const GemmArgs& a, int64_t begin, int64_t end, float* scratch) {
  const auto* w = static_cast<const typename W::Element*>(a.w) + begin * a.k;
  if (a.x_halves != nullptr) {
    widen_halves<W>(w, a.k, end - begin, scratch);
    return halves_columns(a, scratch, begin, end);
  }
  columns<W>(a, w, begin, end);
}

}  // namespace

void gemm_columns_avx2(const GemmArgs& args, int64_t column_begin, int64_t column_end,
                       float* scratch) {
  switch (args.weights) {
    case GemmWeights::f32:
      return run<F32Weights>(args, column_begin, column_end, scratch);
    case GemmWeights::bf16:
      return run<Bf16Weights>(args, column_begin, column_end, scratch);
    case GemmWeights::f16:
      return run<F16Weights>(args, column_begin, column_end, scratch);
    case GemmWeights::f8_e4m3:  // matmul_group runs the reference below AVX-512
      return;
  }
}

}  // namespace hive::cpu

#endif  // __x86_64__
