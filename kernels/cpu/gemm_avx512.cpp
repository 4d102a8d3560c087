// The AVX-512 GEMM kernel (gemm_kernels.hpp): register tiles of 6 rows of x
// by 4 weight rows, one 16-lane accumulator each (24 of the 32 registers),
// so each weight vector loaded serves 6 rows and each x vector 4 outputs.
// Weights are f32, or bf16/f16 widened exactly as they are loaded, or
// f8_e4m3 widened and scaled by their block's scale as they are loaded (half
// of bf16's bytes, for seven more vector operations per 16 values).
//
// Moves: at batch 1 every weight byte once (a GEMV, bound by memory
// bandwidth: bytes(w) per token); for many rows the weight block is reread
// from L1/L2 once per 6 rows and widened again each time: cheaper than
// widening it once into scratch and reading twice the bytes back, at every m
// measured (docs/benchmarks.md).
//
// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c:
// this file includes nothing but intrinsics, gemm_kernels.hpp and
// avx512_fold.hpp, and keeps every helper internal, so no AVX-512 code can
// leak into shared symbols.
#include "kernels/cpu/gemm_kernels.hpp"

#if defined(__x86_64__)
#include "kernels/cpu/avx512_fold.hpp"

namespace hive::cpu {

namespace {

constexpr int kLanes = 16;
constexpr int kTileRows = 6, kTileColumns = 4;

struct F32Weights {
  using Element = float;
  static constexpr bool kScaled = false;
  static __m512 load(const float* w) { return _mm512_loadu_ps(w); }
  static __m512 load_partial(const float* w, __mmask16 mask) {
    return _mm512_maskz_loadu_ps(mask, w);
  }
};

struct Bf16Weights {
  using Element = uint16_t;
  static constexpr bool kScaled = false;
  static __m512 widen(__m256i bits) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
  }
  static __m512 load(const uint16_t* w) {
    return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w)));
  }
  static __m512 load_partial(const uint16_t* w, __mmask16 mask) {
    return widen(_mm256_maskz_loadu_epi16(mask, w));
  }
};

struct F16Weights {
  using Element = uint16_t;
  static constexpr bool kScaled = false;
  static __m512 load(const uint16_t* w) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w)));
  }
  static __m512 load_partial(const uint16_t* w, __mmask16 mask) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, w));
  }
};

// e4m3 (bias 7, no infinities, 0x7f/0xff NaN) read as the top of an f16
// (bias 15): the byte sign-extended to 16 bits and shifted left by 7 puts
// the sign at bit 15 (and a copy at bit 14, cleared) and exponent and
// mantissa where f16 keeps them, so vcvtph2ps gives the value times 2^-8,
// subnormals included. NaN is set by a compare. The block's scale comes
// premultiplied by 2^8 (exact for any scale below 2^120), so the one f32
// multiplication rounds f8_e4m3_to_f32(b) * scale exactly as the reference.
struct F8Weights {
  using Element = uint8_t;
  static constexpr bool kScaled = true;
  static __m512 widen(__m128i bytes, __m512 scale_times_256) {
    const __m256i half = _mm256_and_si256(_mm256_slli_epi16(_mm256_cvtepi8_epi16(bytes), 7),
                                          _mm256_set1_epi16(static_cast<short>(0xbfff)));
    const __mmask16 nan = _mm_cmpeq_epi8_mask(
        _mm_or_si128(bytes, _mm_set1_epi8(static_cast<char>(0x80))), _mm_set1_epi8(-1));
    const __m512 value = _mm512_mask_mov_ps(_mm512_cvtph_ps(half), nan,
                                            _mm512_castsi512_ps(_mm512_set1_epi32(0x7fc00000)));
    return _mm512_mul_ps(value, scale_times_256);
  }
  static __m512 scale(float block_scale) { return _mm512_set1_ps(block_scale * 256.0f); }
  static __m512 load(const uint8_t* w, __m512 scale) {
    return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)), scale);
  }
  static __m512 load_partial(const uint8_t* w, __mmask16 mask, __m512 scale) {
    return widen(_mm_maskz_loadu_epi8(mask, w), scale);
  }
};

// out[r][c] for R rows of x and C weight rows; row strides are k. Prefetch:
// whether the tile also fetches the next tile's weight rows ahead (the first
// row tile of a block, which may read it from memory; see below). Every
// tile fetches its share of `ahead`.
template <int R, int C, class W, bool Prefetch>
inline __attribute__((always_inline)) void tile(const float* x, const typename W::Element* w,
                                                int64_t k, const float* bias, float* out,
                                                int64_t out_stride, Ahead& ahead,
                                                const float* scale_row) {
  // f8_e4m3: the tile's weight rows' block scales (one row of them), the
  // chunk's broadcast as it enters a new 128-column block.
  __m512 scale = _mm512_setzero_ps();
  const auto load = [&](const typename W::Element* at) {
    if constexpr (W::kScaled)
      return W::load(at, scale);
    else
      return W::load(at);
  };
  __m512 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  int64_t p = 0;
  for (; p + kLanes <= k; p += kLanes) {
    if (ahead.next < ahead.end) {
      for (int64_t line = 0; line < ahead.lines; ++line)
        _mm_prefetch(ahead.next + line * 64, _MM_HINT_T1);
      ahead.next += ahead.lines * 64;
    }
    if constexpr (W::kScaled) scale = W::scale(scale_row[p / 128]);
    __m512 wv[C];
    for (int c = 0; c < C; ++c) {
      // The next tile's weight rows, a tile ahead: side by side they are
      // short streams (2 KiB at k = 1024, bf16) that the hardware
      // prefetcher would start too late. A prefetch never faults. A lone
      // row of x walking one weight row at a time is one sequential
      // stream, which the hardware prefetcher follows better alone; with
      // several rows of x the walk is slower and the prefetch still helps
      // (docs/benchmarks.md).
      if constexpr (Prefetch && (C > 1 || R > 1))
        _mm_prefetch(reinterpret_cast<const char*>(w + (C + c) * k + p), _MM_HINT_T0);
      wv[c] = load(w + c * k + p);
    }
    for (int r = 0; r < R; ++r) {
      const __m512 xv = _mm512_loadu_ps(x + r * k + p);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(xv, wv[c], acc[r][c]);
    }
  }
  if (p < k) {
    // Zeros in the missing lanes add exactly nothing (an accumulator that
    // starts at +0 never becomes -0), as the reference's shorter last chunk.
    const __mmask16 mask = static_cast<__mmask16>((1u << (k - p)) - 1);
    __m512 wv[C];
    if constexpr (W::kScaled) {
      scale = W::scale(scale_row[p / 128]);
      for (int c = 0; c < C; ++c) wv[c] = W::load_partial(w + c * k + p, mask, scale);
    } else {
      for (int c = 0; c < C; ++c) wv[c] = W::load_partial(w + c * k + p, mask);
    }
    for (int r = 0; r < R; ++r) {
      const __m512 xv = _mm512_maskz_loadu_ps(mask, x + r * k + p);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(xv, wv[c], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r) store_folded(acc[r], bias, out + r * out_stride);
}

// R rows of x against weight rows [0, columns) of w, tile_columns (4, or 1
// for a lone row) at a time, the last tile narrower. One call per row tile
// with the tiles inlined, as in gemm_avx512_bf16.cpp (a call per tile cost
// its prologue and the accumulators' spills every tile).
// scales: the f8_e4m3 weights' block scales and the first column's index
// (weight row), or nulls.
struct ScaleRows {
  const float* scales = nullptr;
  int64_t first_column = 0, stride = 0;  // stride: ceil(k / 128)
  const float* of(int64_t column) const {
    return scales ? scales + (first_column + column) / 128 * stride : nullptr;
  }
};

template <int R, class W, bool Prefetch = true>
__attribute__((noinline)) void row_tile(int64_t columns, int64_t tile_columns, const float* x,
                                        const typename W::Element* w, int64_t k, const float* bias,
                                        float* out, int64_t out_stride, Ahead& ahead,
                                        const ScaleRows& scale_rows) {
  int64_t j = 0;
  const auto at = [&](int64_t column) { return bias ? bias + column : nullptr; };
  if (tile_columns == kTileColumns) {
    for (; j + kTileColumns <= columns; j += kTileColumns)
      tile<R, kTileColumns, W, Prefetch>(x, w + j * k, k, at(j), out + j, out_stride, ahead,
                                         scale_rows.of(j));
    switch (columns - j) {
      case 3:
        return tile<R, 3, W, Prefetch>(x, w + j * k, k, at(j), out + j, out_stride, ahead,
                                       scale_rows.of(j));
      case 2:
        return tile<R, 2, W, Prefetch>(x, w + j * k, k, at(j), out + j, out_stride, ahead,
                                       scale_rows.of(j));
      case 1:
        return tile<R, 1, W, Prefetch>(x, w + j * k, k, at(j), out + j, out_stride, ahead,
                                       scale_rows.of(j));
      default:
        return;
    }
  }
  for (; j < columns; ++j)
    tile<R, 1, W, Prefetch>(x, w + j * k, k, at(j), out + j, out_stride, ahead, scale_rows.of(j));
}

// row_tile<R, W> for R = 1..6, each fetching its next tile's weights.
template <class W>
constexpr decltype(&row_tile<1, W>) kRowTiles[kTileRows] = {
    row_tile<1, W>, row_tile<2, W>, row_tile<3, W>, row_tile<4, W>, row_tile<5, W>, row_tile<6, W>};

// Columns [begin, end) of out for all rows; w points at weight row `begin`.
template <class W>
void columns(const GemmArgs& a, const typename W::Element* w, int64_t begin, int64_t end) {
  const int64_t k = a.k, n = a.n;
  const ScaleRows scale_rows{a.block_scales, begin, (k + 127) / 128};
  Ahead ahead = ahead_of(reinterpret_cast<const char*>(w + (end - begin) * k),
                         (end - begin) * k * static_cast<int64_t>(sizeof(*w)), a.m, kTileRows,
                         end - begin, kTileColumns, k / kLanes);
  for (int64_t i = 0; i < a.m; i += kTileRows) {
    const int64_t rows_left = a.m - i;
    const int rows = rows_left < kTileRows ? static_cast<int>(rows_left) : kTileRows;
    const int64_t tile_columns = weight_rows_per_tile(rows_left, kTileColumns);
    const float* x = a.x + i * k;
    const float* bias = a.bias ? a.bias + begin : nullptr;
    float* out = a.out + i * n + begin;
    const int64_t cols = end - begin;
    // The first row tile brings the block's weights in (from memory, or
    // from L2 where the task before fetched them ahead); the later ones find
    // them in cache, where a prefetch of the next tile only takes a load
    // slot from the kernel (docs/benchmarks.md).
    const auto row_tile_of =
        i == 0 || rows < kTileRows ? kRowTiles<W>[rows - 1] : row_tile<6, W, false>;
    row_tile_of(cols, tile_columns, x, w, k, bias, out, n, ahead, scale_rows);
  }
}

template <class W>
void run(const GemmArgs& a, int64_t begin, int64_t end) {
  columns<W>(a, static_cast<const typename W::Element*>(a.w) + begin * a.k, begin, end);
}

// f8_e4m3 for more than one row tile: the block's rows widened and scaled
// once into the task's scratch (the values F8Weights::load gives), then
// the f32 kernel over them, so the later row tiles read f32 from cache
// instead of converting again. The same values in the same order: the
// same bits as converting in every tile.
void run_fp8(const GemmArgs& a, int64_t begin, int64_t end) {
  if (a.m <= kTileRows || !a.w_scratch) return run<F8Weights>(a, begin, end);
  const int64_t k = a.k;
  const ScaleRows scale_rows{a.block_scales, begin, (k + 127) / 128};
  const uint8_t* w = static_cast<const uint8_t*>(a.w) + begin * k;
  for (int64_t r = 0; r < end - begin; ++r) {
    const float* scale_row = scale_rows.of(r);
    const uint8_t* src = w + r * k;
    float* dst = a.w_scratch + r * k;
    int64_t p = 0;
    for (; p + kLanes <= k; p += kLanes)
      _mm512_storeu_ps(dst + p, F8Weights::load(src + p, F8Weights::scale(scale_row[p / 128])));
    if (p < k) {
      const __mmask16 mask = static_cast<__mmask16>((1u << (k - p)) - 1);
      _mm512_mask_storeu_ps(
          dst + p, mask,
          F8Weights::load_partial(src + p, mask, F8Weights::scale(scale_row[p / 128])));
    }
  }
  columns<F32Weights>(a, a.w_scratch, begin, end);
}

}  // namespace

void gemm_columns_avx512(const GemmArgs& args, int64_t column_begin, int64_t column_end) {
  switch (args.weights) {
    case GemmWeights::f32:
      return run<F32Weights>(args, column_begin, column_end);
    case GemmWeights::bf16:
      return run<Bf16Weights>(args, column_begin, column_end);
    case GemmWeights::f16:
      return run<F16Weights>(args, column_begin, column_end);
    case GemmWeights::f8_e4m3:
      return run_fp8(args, column_begin, column_end);
  }
}

}  // namespace hive::cpu

#endif  // __x86_64__
