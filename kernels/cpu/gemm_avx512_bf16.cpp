// The bf16 matmul mode's kernel (gemm_kernels.hpp, MatmulPrecision::bf16):
// x rounded to bf16 once per call, bf16 weights read as stored, and
// vdpbf16ps multiplying 32 pairs per instruction into 16 f32 lanes: twice the
// multiply-adds of an f32 FMA per instruction, and no widening of weights.
// Register tiles of 6 rows of x by 4 weight rows: 24 accumulators, 4 weight
// and 1 x register of the 32, 24 vdpbf16ps per 10 loads.
//
// Both operands are row-major [*, k], and vdpbf16ps pairs adjacent values,
// so neither needs a repacked layout: lane l of a 32-value chunk takes the
// pair (2l, 2l + 1).
//
// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16;
// like gemm_avx512.cpp it includes nothing but intrinsics, gemm_kernels.hpp
// and avx512_fold.hpp, and keeps its helpers internal.
#include "kernels/cpu/gemm_kernels.hpp"

#if defined(__x86_64__)
#include "kernels/cpu/avx512_fold.hpp"

namespace hive::cpu {

namespace {

constexpr int kPairs = 32;  // bf16 values per vdpbf16ps operand
constexpr int kTileRows = 6, kTileColumns = 4;
constexpr int64_t kStreamAhead = 4;  // weight rows

inline __m512bh load(const uint16_t* p) {
  return (__m512bh)_mm512_loadu_si512(p);
}
inline __m512bh load_partial(const uint16_t* p, __mmask32 mask) {
  return (__m512bh)_mm512_maskz_loadu_epi16(mask, p);
}

// out[r][c] for R rows of x and C weight rows; row strides are k. Prefetch:
// whether the tile also fetches the next tile's weight rows ahead (the first
// row tile of a block, which may read it from memory). Every tile fetches
// its share of `ahead`.
template <int R, int C, bool Prefetch>
inline __attribute__((always_inline)) void tile(const uint16_t* x, const uint16_t* w, int64_t k,
                                                const float* bias, float* out, int64_t out_stride,
                                                Ahead& ahead) {
  __m512 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  int64_t p = 0;
  for (; p + kPairs <= k; p += kPairs) {
    if (ahead.next < ahead.end) {
      for (int64_t line = 0; line < ahead.lines; ++line)
        _mm_prefetch(ahead.next + line * 64, _MM_HINT_T1);
      ahead.next += ahead.lines * 64;
    }
    __m512bh wv[C];
    for (int c = 0; c < C; ++c) {
      // The next tile's weight rows, a tile ahead, unless a lone row of x
      // walks one weight row at a time (gemm_avx512.cpp says why). A few
      // rows of x walking one weight row at a time stream it from memory:
      // into L2, kStreamAhead rows ahead, which keeps more lines in flight
      // than L1's misses allow (docs/benchmarks.md).
      if constexpr (Prefetch && C == 1 && R > 1)
        _mm_prefetch(reinterpret_cast<const char*>(w + kStreamAhead * k + p), _MM_HINT_T1);
      else if constexpr (Prefetch && (C > 1 || R > 1))
        _mm_prefetch(reinterpret_cast<const char*>(w + (C + c) * k + p), _MM_HINT_T0);
      wv[c] = load(w + c * k + p);
    }
    for (int r = 0; r < R; ++r) {
      const __m512bh xv = load(x + r * k + p);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], xv, wv[c]);
    }
  }
  if (p < k) {
    // Zero pairs add exactly nothing, whatever the lane.
    const __mmask32 mask = static_cast<__mmask32>((uint64_t{1} << (k - p)) - 1);
    __m512bh wv[C];
    for (int c = 0; c < C; ++c) wv[c] = load_partial(w + c * k + p, mask);
    for (int r = 0; r < R; ++r) {
      const __m512bh xv = load_partial(x + r * k + p, mask);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], xv, wv[c]);
    }
  }
  for (int r = 0; r < R; ++r) store_folded(acc[r], bias, out + r * out_stride);
}

// R rows of x against weight rows [0, columns) of w, tile_columns (4, or 1
// for a lone row tile) at a time, the last tile narrower. One call per row
// tile with the tiles inlined: a call per tile paid its prologue and its
// accumulators' trip through the stack every tile (docs/design/kernels.md).
template <int R, bool Prefetch = true>
__attribute__((noinline)) void row_tile(int64_t columns, int64_t tile_columns, const uint16_t* x,
                                        const uint16_t* w, int64_t k, const float* bias, float* out,
                                        int64_t out_stride, Ahead& ahead) {
  int64_t j = 0;
  const auto at = [&](int64_t column) { return bias ? bias + column : nullptr; };
  if (tile_columns == kTileColumns) {
    for (; j + kTileColumns <= columns; j += kTileColumns)
      tile<R, kTileColumns, Prefetch>(x, w + j * k, k, at(j), out + j, out_stride, ahead);
    switch (columns - j) {
      case 3:
        return tile<R, 3, Prefetch>(x, w + j * k, k, at(j), out + j, out_stride, ahead);
      case 2:
        return tile<R, 2, Prefetch>(x, w + j * k, k, at(j), out + j, out_stride, ahead);
      case 1:
        return tile<R, 1, Prefetch>(x, w + j * k, k, at(j), out + j, out_stride, ahead);
      default:
        return;
    }
  }
  for (; j < columns; ++j) tile<R, 1, Prefetch>(x, w + j * k, k, at(j), out + j, out_stride, ahead);
}

// row_tile<R> for R = 1..6, each fetching its next tile's weights.
constexpr decltype(&row_tile<1>) kRowTiles[kTileRows] = {row_tile<1>, row_tile<2>, row_tile<3>,
                                                         row_tile<4>, row_tile<5>, row_tile<6>};

}  // namespace

void round_to_bf16_avx512_bf16(const float* x, int64_t count, uint16_t* out) {
  int64_t p = 0;
  for (; p + 16 <= count; p += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + p),
                        (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(x + p)));
  if (p < count) {
    const __mmask16 mask = static_cast<__mmask16>((1u << (count - p)) - 1);
    _mm256_mask_storeu_epi16(out + p, mask,
                             (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, x + p)));
  }
}

void gemm_columns_avx512_bf16(const GemmArgs& a, int64_t column_begin, int64_t column_end) {
  const int64_t k = a.k, n = a.n;
  const auto* w = static_cast<const uint16_t*>(a.w);
  Ahead ahead = ahead_of(reinterpret_cast<const char*>(w + column_end * k),
                         (column_end - column_begin) * k * 2, a.m, kTileRows,
                         column_end - column_begin, kTileColumns, k / kPairs);
  for (int64_t i = 0; i < a.m; i += kTileRows) {
    const int64_t rows_left = a.m - i;
    const int rows = rows_left < kTileRows ? static_cast<int>(rows_left) : kTileRows;
    // A product of one row tile (decode of a few sequences, an expert's few
    // tokens) streams its weights from memory once: one weight row at a
    // time, as a lone row does, reads them faster than four side by side,
    // and the kernel's few chains of vdpbf16ps keep up (docs/benchmarks.md).
    // The f32 kernel's FMAs, twice as many per byte, do not.
    const int64_t tile_columns =
        a.m <= kTileRows ? 1 : weight_rows_per_tile(rows_left, kTileColumns);
    const int64_t columns = column_end - column_begin;
    const uint16_t* x = a.x_bf16 + i * k;
    const uint16_t* wj = w + column_begin * k;
    const float* bias = a.bias ? a.bias + column_begin : nullptr;
    float* out = a.out + i * n + column_begin;
    // As in gemm_avx512.cpp: only the first row tile fetches the next tile.
    const auto row_tile_of = i == 0 || rows < kTileRows ? kRowTiles[rows - 1] : row_tile<6, false>;
    row_tile_of(columns, tile_columns, x, wj, k, bias, out, n, ahead);
  }
}

}  // namespace hive::cpu

#endif  // __x86_64__
