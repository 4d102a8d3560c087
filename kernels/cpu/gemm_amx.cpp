// The bf16 matmul mode's kernel on the amx path (gemm_kernels.hpp,
// MatmulPrecision::bf16): AMX tiles, each tdpbf16ps multiplying a 16 x 32
// bf16 tile by a 32 x 16 one into 16 x 16 f32 sums, 16 times the
// multiply-adds of a vdpbf16ps.
//
// The product is computed transposed, out^T = w . x^T, so that the weights
// are the tiles' A operand, read as stored: 16 weight rows of 32 values,
// 64 bytes each at the row stride. x is the B operand, which tdpbf16ps
// wants as pairs of values across the rows of the tile (VNNI order); x is
// rounded and packed into that order once per call (pack_x_amx), a cost
// of a few hundred bytes per row against the weights' megabytes.
//
// The one reduction order: output (i, j) is one f32 sum, to which every
// tdpbf16ps adds its 32-value chunk of k in increasing order, the last
// chunk zero-filled; then + bias[j]. Which tile shape computed it, and
// which other rows or columns shared its tiles, changes no bit, so a row's
// bits do not depend on m, on its neighbours or on the threads. The order
// is not the avx512_bf16 path's (16 lanes folded), so the two paths' bits
// differ, as every ISA path's do in this mode.
//
// Compiled with the AVX-512 flags of gemm_avx512_bf16.cpp and -mamx-tile
// -mamx-bf16; like the other kernels it uses no library templates, whose
// copies here would be built with these flags.
#include "kernels/cpu/gemm_kernels.hpp"

#if defined(__x86_64__)
#include "kernels/cpu/amx_tiles.hpp"
#include "kernels/cpu/avx512_transpose.hpp"

namespace hive::cpu {

namespace {

constexpr int64_t kTileRows = 16;                     // rows of every tile
constexpr int64_t kPairs = 32;                        // bf16 values in a tile row (64 bytes)
constexpr int64_t kChunkValues = kTileRows * kPairs;  // one packed x tile
constexpr int64_t kTileBytes = 64;                    // a tile row's bytes

// Every tile 16 rows of 64 bytes, or single()'s A and C tiles `weight_rows`
// rows for a last, partial block of weight rows.
void configure_tiles(int64_t weight_rows) {
  amx::TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.bytes_per_row[t] = kTileBytes;
    config.rows[t] = kTileRows;
  }
  config.rows[0] = config.rows[4] = static_cast<uint8_t>(weight_rows);
  amx::load_tile_config(config);
}

// Where a block of weight rows' A tiles come from: chunk c < full_chunks
// at w + c * 32 (rows `stride` values apart), the last, partial chunk from
// `tail` (its rows 32 values apart, zero past k), if k has one.
struct Weights {
  const uint16_t* w;
  int64_t stride;
  int64_t full_chunks;
  const uint16_t* tail;
};

constexpr int64_t lesser(int64_t a, int64_t b) {
  return a < b ? a : b;
}

// The f32 sums of a C tile, [weight row][x row].
using Sums = float[kTileRows][kTileRows];

// 4 blocks of 16 weight rows (64 rows from w.w, and from w.tail 16 rows per
// block) by one block of x: C tiles 0-3, x in tile 4, A in tiles 5-7.
void quad(const Weights& w, const uint16_t* x, Sums* sums) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const int64_t stride = w.stride * 2, block = kTileRows * w.stride;
  const uint16_t* a = w.w;
  for (int64_t c = 0; c < w.full_chunks; ++c, a += kPairs, x += kChunkValues) {
    _tile_loadd(4, x, kTileBytes);
    _tile_loadd(5, a, stride);
    _tile_dpbf16ps(0, 5, 4);
    _tile_loadd(6, a + block, stride);
    _tile_dpbf16ps(1, 6, 4);
    _tile_loadd(7, a + 2 * block, stride);
    _tile_dpbf16ps(2, 7, 4);
    _tile_loadd(5, a + 3 * block, stride);
    _tile_dpbf16ps(3, 5, 4);
  }
  if (w.tail) {
    _tile_loadd(4, x, kTileBytes);
    _tile_loadd(5, w.tail, kTileBytes);
    _tile_dpbf16ps(0, 5, 4);
    _tile_loadd(6, w.tail + kChunkValues, kTileBytes);
    _tile_dpbf16ps(1, 6, 4);
    _tile_loadd(7, w.tail + 2 * kChunkValues, kTileBytes);
    _tile_dpbf16ps(2, 7, 4);
    _tile_loadd(5, w.tail + 3 * kChunkValues, kTileBytes);
    _tile_dpbf16ps(3, 5, 4);
  }
  _tile_stored(0, sums[0], kTileBytes);
  _tile_stored(1, sums[1], kTileBytes);
  _tile_stored(2, sums[2], kTileBytes);
  _tile_stored(3, sums[3], kTileBytes);
}

// 2 blocks of 16 weight rows by 2 blocks of x (x0, x1): C tile 2b + e for
// weight block b and x block e, A in tiles 4-5, x in 6-7.
void pair(const Weights& w, const uint16_t* x0, const uint16_t* x1, Sums* sums) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const int64_t stride = w.stride * 2, block = kTileRows * w.stride;
  const uint16_t* a = w.w;
  for (int64_t c = 0; c < w.full_chunks; ++c, a += kPairs, x0 += kChunkValues, x1 += kChunkValues) {
    // The next chunk's x tiles into L1: their loads from L2 stalled the
    // tiles (docs/benchmarks.md). The weights' strided rows need no help.
    for (int64_t line = 0; line < kChunkValues; line += kPairs) {
      _mm_prefetch(reinterpret_cast<const char*>(x0 + kChunkValues + line), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(x1 + kChunkValues + line), _MM_HINT_T0);
    }
    _tile_loadd(4, a, stride);
    _tile_loadd(6, x0, kTileBytes);
    _tile_dpbf16ps(0, 4, 6);
    _tile_loadd(7, x1, kTileBytes);
    _tile_dpbf16ps(1, 4, 7);
    _tile_loadd(5, a + block, stride);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  if (w.tail) {
    _tile_loadd(4, w.tail, kTileBytes);
    _tile_loadd(6, x0, kTileBytes);
    _tile_dpbf16ps(0, 4, 6);
    _tile_loadd(7, x1, kTileBytes);
    _tile_dpbf16ps(1, 4, 7);
    _tile_loadd(5, w.tail + kChunkValues, kTileBytes);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, sums[0], kTileBytes);
  _tile_stored(1, sums[1], kTileBytes);
  _tile_stored(2, sums[2], kTileBytes);
  _tile_stored(3, sums[3], kTileBytes);
}

// One block of weight rows (16, or fewer under configure_tiles(rows)) by one
// block of x: C in tile 0, A in tile 4, x in tile 6.
void single(const Weights& w, const uint16_t* x, Sums& sums) {
  _tile_zero(0);
  const int64_t stride = w.stride * 2;
  const uint16_t* a = w.w;
  for (int64_t c = 0; c < w.full_chunks; ++c, a += kPairs, x += kChunkValues) {
    _tile_loadd(4, a, stride);
    _tile_loadd(6, x, kTileBytes);
    _tile_dpbf16ps(0, 4, 6);
  }
  if (w.tail) {
    _tile_loadd(4, w.tail, kTileBytes);
    _tile_loadd(6, x, kTileBytes);
    _tile_dpbf16ps(0, 4, 6);
  }
  _tile_stored(0, sums, kTileBytes);
}

// out[j][i] = sums[i][j] + bias[i] for weight rows i < columns and x rows
// j < rows; the bias or zero is always added (-0 + 0 is +0), as the other
// kernels do.
void store(const Sums& sums, int64_t columns, int64_t rows, const float* bias, float* out,
           int64_t out_stride) {
  __m512i by_weight_row[kTileRows], by_x_row[kTileRows];
  for (int64_t i = 0; i < kTileRows; ++i) by_weight_row[i] = _mm512_loadu_si512(sums[i]);
  transpose_16x16(by_weight_row, by_x_row);
  const __mmask16 mask = static_cast<__mmask16>((1u << columns) - 1);
  const __m512 b = bias ? _mm512_maskz_loadu_ps(mask, bias) : _mm512_setzero_ps();
  for (int64_t j = 0; j < rows; ++j)
    _mm512_mask_storeu_ps(out + j * out_stride, mask,
                          _mm512_add_ps(_mm512_castsi512_ps(by_x_row[j]), b));
}

// The last chunk of `rows` weight rows from w (k values each, k % 32 of them
// in that chunk), zero-filled, into tail: [rows rounded up to 16][32].
void fill_tail(const uint16_t* w, int64_t rows, int64_t k, uint16_t* tail, int64_t tail_rows) {
  const int64_t first = k / kPairs * kPairs;
  const __mmask32 mask = static_cast<__mmask32>((uint64_t{1} << (k - first)) - 1);
  for (int64_t r = 0; r < tail_rows; ++r) {
    const __m512i v =
        r < rows ? _mm512_maskz_loadu_epi16(mask, w + r * k + first) : _mm512_setzero_si512();
    _mm512_storeu_si512(tail + r * kPairs, v);
  }
}

}  // namespace

void pack_x_amx(const float* x, int64_t m, int64_t k, int64_t block, uint16_t* out) {
  const int64_t chunks = amx_chunks(k);
  const int64_t first_row = block * kTileRows;
  out += block * kTileRows * chunks * kPairs;
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t p = c * kPairs;
    // Row i's 32 values as 16 pairs, zero past k and past m.
    const __mmask16 low = static_cast<__mmask16>(p + 16 <= k ? 0xffff : (1u << (k - p)) - 1);
    const __mmask16 high = static_cast<__mmask16>(p + 32 <= k   ? 0xffff
                                                  : p + 16 >= k ? 0
                                                                : (1u << (k - p - 16)) - 1);
    __m512i rows[kTileRows], pairs[kTileRows];
    for (int64_t i = 0; i < kTileRows; ++i) {
      if (first_row + i >= m) {
        rows[i] = _mm512_setzero_si512();
        continue;
      }
      const float* row = x + (first_row + i) * k + p;
      rows[i] = (__m512i)_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(high, row + 16),
                                             _mm512_maskz_loadu_ps(low, row));
    }
    transpose_16x16(rows, pairs);
    for (int64_t q = 0; q < kTileRows; ++q)
      _mm512_storeu_si512(out + c * kChunkValues + q * kPairs, pairs[q]);
  }
}

// Aligned to a cache line: the 2 x 2 loop's rate moved by a quarter with its
// place in the lines it spans (its start 24 or 40 bytes into a line: 780-810
// GFLOP/s a core; 0 or 16: 610-680, docs/benchmarks.md), and the object's
// place in a link no longer moves it.
__attribute__((aligned(64))) void gemm_columns_amx(const GemmArgs& a, int64_t column_begin,
                                                   int64_t column_end) {
  const int64_t k = a.k, n = a.n, chunks = amx_chunks(k);
  const int64_t x_blocks = (a.m + kTileRows - 1) / kTileRows;
  const int64_t block_values = kTileRows * chunks * kPairs;  // one packed block of x
  const auto* w = static_cast<const uint16_t*>(a.w);
  const bool has_tail = k % kPairs != 0;
  alignas(64) uint16_t tail[4 * kChunkValues];
  alignas(64) Sums sums[4];
  const auto weights = [&](int64_t column, int64_t rows) {
    if (has_tail)
      fill_tail(w + column * k, rows, k, tail, (rows + kTileRows - 1) / kTileRows * kTileRows);
    return Weights{w + column * k, k, k / kPairs, has_tail ? tail : nullptr};
  };
  const auto bias_at = [&](int64_t column) { return a.bias ? a.bias + column : nullptr; };
  const auto x_rows = [&](int64_t block) { return lesser(kTileRows, a.m - block * kTileRows); };
  configure_tiles(kTileRows);
  int64_t j = column_begin;
  if (x_blocks == 1) {
    // Decode of up to 16 sequences, an expert's few tokens: 64 weight rows
    // per pass over x's one block.
    for (; j + 4 * kTileRows <= column_end; j += 4 * kTileRows) {
      quad(weights(j, 4 * kTileRows), a.x_amx, sums);
      for (int64_t b = 0; b < 4; ++b)
        store(sums[b], kTileRows, a.m, bias_at(j + b * kTileRows), a.out + j + b * kTileRows, n);
    }
  } else {
    // Pairs of x blocks; an odd last block pairs with the zero block that
    // pack_x_amx's caller leaves after it.
    for (; j + 2 * kTileRows <= column_end; j += 2 * kTileRows) {
      const Weights wj = weights(j, 2 * kTileRows);
      for (int64_t e = 0; e < x_blocks; e += 2) {
        const uint16_t* x0 = a.x_amx + e * block_values;
        pair(wj, x0, x0 + block_values, sums);
        float* out = a.out + e * kTileRows * n + j;
        const int64_t rows0 = x_rows(e), rows1 = e + 1 < x_blocks ? x_rows(e + 1) : 0;
        store(sums[0], kTileRows, rows0, bias_at(j), out, n);
        store(sums[1], kTileRows, rows1, bias_at(j), out + kTileRows * n, n);
        store(sums[2], kTileRows, rows0, bias_at(j + kTileRows), out + kTileRows, n);
        store(sums[3], kTileRows, rows1, bias_at(j + kTileRows), out + kTileRows * n + kTileRows,
              n);
      }
    }
  }
  // Blocks of 16 weight rows left, then a partial block under its own
  // configuration.
  for (; j < column_end; j += kTileRows) {
    const int64_t columns = lesser(kTileRows, column_end - j);
    if (columns < kTileRows) configure_tiles(columns);
    const Weights wj = weights(j, columns);
    for (int64_t e = 0; e < x_blocks; ++e) {
      if (columns < kTileRows) __builtin_memset(sums, 0, sizeof(Sums));
      single(wj, a.x_amx + e * block_values, sums[0]);
      store(sums[0], columns, x_rows(e), bias_at(j), a.out + e * kTileRows * n + j, n);
    }
  }
  amx::release_tiles();
}

}  // namespace hive::cpu

#endif  // __x86_64__
