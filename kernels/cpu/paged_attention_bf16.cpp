// The batched paged attention's tile in the bf16 mode (cpu_features.hpp,
// MatmulPrecision::bf16): add_tile's online softmax with its two products
// made by vdpbf16ps, 32 pairs of bf16 per instruction into 16 f32 lanes,
// where add_tile widens the bf16 cache to f32 and makes 16 multiply-adds.
//
// vdpbf16ps adds, per lane, the products of one adjacent pair of each
// operand, so each product needs the values it sums over side by side:
//   scores: lane j is key j, summing over the head's dimensions in pairs
//     (2p, 2p + 1): q's pair p broadcast against key_pairs[p], the pair p of
//     the tile's 32 keys. Keys lie along the lanes, so no sum is folded
//     across lanes.
//   values: lane d is the dimension, summing over positions in pairs
//     (2t, 2t + 1): the weights' pair t broadcast against value_pairs[t],
//     value rows 2t and 2t + 1 interleaved.
// K and V are read as the cache stores them (bf16); q (once per chunk of
// the context, round_queries_bf16) and each tile's softmax weights are
// rounded to bf16, the rounding the bf16 mode's matmul gives x (about
// 2^-9 relative); scores, the softmax and the sums stay f32.
//
// The same invariance as add_tile: the tile buffers hold the positions any
// query of the item sees (zero elsewhere), and a query adds only the pairs
// that hold a position it sees. In a pair it sees half of, the other half's
// weight is +0 and adds nothing to a nonzero sum, so its bits depend on its
// own q, keys and values alone, in a batch, a chunk or a decode.
//
// Its functions carry the ISA as a target attribute (HIVE_PAGED_BF16), not
// the file as flags.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/amx_tiles.hpp"
#include "kernels/cpu/avx512_transpose.hpp"
#include "kernels/cpu/paged_attention_tile.hpp"

namespace hive::cpu::paged {

#if defined(__x86_64__)

namespace {

constexpr int64_t kPairLanes = 16;  // f32 lanes of a vdpbf16ps

inline HIVE_PAGED_BF16 __attribute__((always_inline)) __m512bh pairs_of(uint32_t pair) {
  return (__m512bh)_mm512_set1_epi32(static_cast<int>(pair));
}

// `count` floats (a multiple of 32) as bf16 pairs, rounded to nearest even.
inline HIVE_PAGED_BF16 __attribute__((always_inline)) void round_pairs(const float* x,
                                                                       int64_t count,
                                                                       uint32_t* out) {
  for (int64_t p = 0; p < count; p += 32) {
    const __m512bh pair = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + p + 16), _mm512_loadu_ps(x + p));
    _mm512_storeu_si512(out + p / 2, (__m512i)pair);
  }
}

// The item's rows of positions [lo, hi) of the tile that starts at
// tile_begin into s.key_pairs (transposed: pair p of key j at p * kKeyTile +
// j) and s.value_pairs (rows 2t and 2t + 1 interleaved, element d of row 2t
// + e at (t * head_dim + d) * 2 + e); every other position is 0.
inline HIVE_PAGED_BF16 __attribute__((always_inline)) void load_pairs(const Layout& l,
                                                                      const Item& item, int64_t kvh,
                                                                      int64_t tile_begin,
                                                                      int64_t lo, int64_t hi,
                                                                      Scratch& s) {
  const int32_t* table = l.tables + l.table_start[item.seq];
  const int64_t hd = l.head_dim;
  const auto* k = static_cast<const uint16_t*>(l.k);
  const auto* v = static_cast<const uint16_t*>(l.v);
  const __m512i zero = _mm512_setzero_si512();
  // Keys 16 at a time, their pairs 16 at a time (32 values of each row).
  for (int64_t j0 = 0; j0 < kKeyTile; j0 += 16) {
    const uint16_t* rows[16];
    for (int64_t j = 0; j < 16; ++j) {
      const int64_t position = tile_begin + j0 + j;
      rows[j] = position >= lo && position < hi ? k + row_offset(l, table, kvh, position) : nullptr;
    }
    for (int64_t d = 0; d < hd; d += 32) {
      __m512i r[16], c[16];
      for (int j = 0; j < 16; ++j) r[j] = rows[j] ? _mm512_loadu_si512(rows[j] + d) : zero;
      transpose_16x16(r, c);
      for (int p = 0; p < 16; ++p)
        _mm512_storeu_si512(s.key_pairs.data() + (d / 2 + p) * kKeyTile + j0, c[p]);
    }
  }
  // Interleaving two rows: the low 16 values of a 32-value block from each,
  // then the high 16.
  alignas(64) static constexpr uint16_t kLow[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                                    37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                                    11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  alignas(64) static constexpr uint16_t kHigh[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21,
                                                     53, 22, 54, 23, 55, 24, 56, 25, 57, 26, 58,
                                                     27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  const __m512i low = _mm512_load_si512(kLow), high = _mm512_load_si512(kHigh);
  for (int64_t t = (lo - tile_begin) / 2; t < (hi - tile_begin + 1) / 2; ++t) {
    const int64_t first = tile_begin + 2 * t, second = first + 1;
    const uint16_t* a = first >= lo ? v + row_offset(l, table, kvh, first) : nullptr;
    const uint16_t* b = second < hi ? v + row_offset(l, table, kvh, second) : nullptr;
    uint16_t* out = s.value_pairs.data() + t * 2 * hd;
    for (int64_t d = 0; d < hd; d += 32) {
      const __m512i x = a ? _mm512_loadu_si512(a + d) : zero;
      const __m512i y = b ? _mm512_loadu_si512(b + d) : zero;
      _mm512_storeu_si512(out + 2 * d, _mm512_permutex2var_epi16(x, low, y));
      _mm512_storeu_si512(out + 2 * d + 32, _mm512_permutex2var_epi16(x, high, y));
    }
  }
}

// Raw scores of the tile's 32 keys for G heads of one query: scores[g *
// kKeyTile + j] = sum over pairs p in order of the pair products of q_pairs[g
// * pairs + p] and key j's pair p.
template <int G>
inline HIVE_PAGED_BF16 __attribute__((always_inline)) void scores_of(const uint32_t* q_pairs,
                                                                     int64_t pairs,
                                                                     const uint32_t* key_pairs,
                                                                     float* scores) {
  __m512 acc[G][2];
  for (int g = 0; g < G; ++g) acc[g][0] = acc[g][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < pairs; ++p) {
    const auto k0 = (__m512bh)_mm512_loadu_si512(key_pairs + p * kKeyTile);
    const auto k1 = (__m512bh)_mm512_loadu_si512(key_pairs + p * kKeyTile + kPairLanes);
    for (int g = 0; g < G; ++g) {
      const __m512bh q = pairs_of(q_pairs[g * pairs + p]);
      acc[g][0] = _mm512_dpbf16_ps(acc[g][0], q, k0);
      acc[g][1] = _mm512_dpbf16_ps(acc[g][1], q, k1);
    }
  }
  for (int g = 0; g < G; ++g) {
    _mm512_storeu_ps(scores + g * kKeyTile, acc[g][0]);
    _mm512_storeu_ps(scores + g * kKeyTile + kPairLanes, acc[g][1]);
  }
}

// acc[g][d0 + d] += the pair products of weight pairs [t_lo, t_hi) and
// value pairs, in increasing t, for G heads (acc head_dim apart, weight
// pairs kKeyTile / 2 apart) and B blocks of 16 dimensions.
template <int G, int B>
inline HIVE_PAGED_BF16 __attribute__((always_inline)) void add_value_pairs(
    float* acc, int64_t hd, const uint32_t* weight_pairs, const uint16_t* value_pairs, int64_t t_lo,
    int64_t t_hi, int64_t d0) {
  __m512 a[G][B];
  for (int g = 0; g < G; ++g)
    for (int b = 0; b < B; ++b) a[g][b] = _mm512_loadu_ps(acc + g * hd + d0 + kPairLanes * b);
  for (int64_t t = t_lo; t < t_hi; ++t) {
    __m512bh v[B];
    for (int b = 0; b < B; ++b)
      v[b] = (__m512bh)_mm512_loadu_si512(value_pairs + (t * hd + d0 + kPairLanes * b) * 2);
    for (int g = 0; g < G; ++g) {
      const __m512bh w = pairs_of(weight_pairs[g * kKeyTile / 2 + t]);
      for (int b = 0; b < B; ++b) a[g][b] = _mm512_dpbf16_ps(a[g][b], w, v[b]);
    }
  }
  for (int g = 0; g < G; ++g)
    for (int b = 0; b < B; ++b) _mm512_storeu_ps(acc + g * hd + d0 + kPairLanes * b, a[g][b]);
}

template <int G>
inline HIVE_PAGED_BF16 __attribute__((always_inline)) void add_values(float* acc, int64_t hd,
                                                                      const uint32_t* weights,
                                                                      const uint16_t* values,
                                                                      int64_t t_lo, int64_t t_hi) {
  int64_t d0 = 0;
  for (; d0 + 64 <= hd; d0 += 64) add_value_pairs<G, 4>(acc, hd, weights, values, t_lo, t_hi, d0);
  if (d0 < hd) add_value_pairs<G, 2>(acc, hd, weights, values, t_lo, t_hi, d0);  // 32 left
}

// The amx path's tile (Layout::amx): the same tile as add_tile_bf16, its
// two products as AMX tiles over the rows of every (query, head) of the
// item that sees the tile, 16 rows at a time: scores = q rows . key pairs
// (two 16-key C tiles, head_dim in chunks of 32), then per row the
// softmax, then acc rows += weight rows . value pairs (16 dimensions per C
// tile, the tile's 16 pairs of positions in one tdpbf16ps). Each row's sums
// are its own, whichever rows share its tiles; rows of queries that do not
// see the tile are not in any tile (the last block of rows is configured
// to its height), so their state keeps its bits.

// C tiles 0-3 and the A tile 4 `rows` rows high, B tiles 6-7 16 rows; all
// 64 bytes wide.
inline HIVE_PAGED_AMX __attribute__((always_inline)) void configure_rows(int64_t rows, Scratch& s) {
  if (s.amx_rows == rows) return;
  amx::TileConfig config;
  for (int t : {0, 1, 2, 3, 4, 6, 7}) {
    config.bytes_per_row[t] = 64;
    config.rows[t] = static_cast<uint8_t>(t < 6 ? rows : 16);
  }
  amx::load_tile_config(config);
  s.amx_rows = rows;
}

// Full-mask forms of the intrinsics whose unmasked forms GCC 12 flags (their
// undefined pass-through, as transpose_16x16 says).
constexpr __mmask16 kAll = 0xffff;
inline HIVE_PAGED_AMX __attribute__((always_inline)) __m512 max16(__m512 a, __m512 b) {
  return _mm512_mask_max_ps(a, kAll, a, b);
}
inline HIVE_PAGED_AMX __attribute__((always_inline)) __m512 min16(__m512 a, __m512 b) {
  return _mm512_mask_min_ps(a, kAll, a, b);
}

// vector_exp (vector_exp.hpp) in 16 lanes, the same operations lane for lane.
inline HIVE_PAGED_AMX __attribute__((always_inline)) __m512 exp16(__m512 x) {
#define f _mm512_set1_ps
  x = min16(max16(x, f(-100.0f)), f(88.0f));
  const __m512 shifter = f(12582912.0f);
  const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(x, f(1.44269504088896341f), shifter), shifter);
  __m512 r = _mm512_fmadd_ps(n, f(-0.693359375f), x);
  r = _mm512_fmadd_ps(n, f(2.12194440e-4f), r);
  __m512 p = f(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, f(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, f(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, f(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, f(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, f(5.0000001201e-1f));
  p = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), f(1.0f));
  const __m512i zero = _mm512_setzero_si512();
  const __m512i e = _mm512_mask_cvttps_epi32(zero, kAll, n);
  const __m512i biased = _mm512_add_epi32(e, _mm512_set1_epi32(127));
  const __m512i bits =
      _mm512_mask_slli_epi32(zero, kAll, _mm512_mask_max_epi32(zero, kAll, biased, zero), 23);
  const __mmask16 tiny = _mm512_cmplt_epi32_mask(e, _mm512_set1_epi32(-126));
  return _mm512_maskz_mul_ps(static_cast<__mmask16>(~tiny), p, _mm512_castsi512_ps(bits));
#undef f
}

// The softmax of rows [r, r + rows) of s.scores (raw scores, rows of
// kKeyTile; row r + q sees lanes [lo[q], hi[q])), each row in one lane of
// 16: the rows' scores transposed so that lane q is row r + q, then
// softmax_row's steps for all of them at once (the max, exp16, the sum in
// softmax_row's order, the running state), the acc rows rescaled, and the
// weights rounded into s.weight_pairs' rows. A row's lane sees only its
// own values, so its bits do not depend on the rows beside it.
inline HIVE_PAGED_AMX __attribute__((always_inline)) void softmax_rows(
    const Layout& l, int64_t r, int64_t rows, const int32_t* lo, const int32_t* hi, Scratch& s) {
  const __mmask16 active = static_cast<__mmask16>((1u << rows) - 1);
  __m512i in[16];
  __m512 x[kKeyTile];
  for (int half = 0; half < 2; ++half) {
    for (int64_t q = 0; q < 16; ++q)
      in[q] = q < rows ? _mm512_loadu_si512(s.scores.data() + (r + q) * kKeyTile + 16 * half)
                       : _mm512_setzero_si512();
    transpose_16x16(in, reinterpret_cast<__m512i*>(x + 16 * half));
  }
  const __m512i lo_v = _mm512_load_si512(lo), hi_v = _mm512_load_si512(hi);
  const __m512 scale = _mm512_set1_ps(l.scale), minus_infinity = _mm512_set1_ps(-INFINITY);
  __m512 top = minus_infinity;
  for (int j = 0; j < kKeyTile; ++j) {
    const __m512i lane = _mm512_set1_epi32(j);
    const __mmask16 seen =
        _mm512_cmple_epi32_mask(lo_v, lane) & _mm512_cmplt_epi32_mask(lane, hi_v);
    x[j] = _mm512_mask_mul_ps(minus_infinity, seen, x[j], scale);
    top = max16(top, x[j]);
  }
  float* max = s.max.data() + r;
  float* sum = s.sum.data() + r;
  const __m512 running = _mm512_maskz_loadu_ps(active, max);
  const __m512 new_max = max16(running, top);
  const __m512 rescale = exp16(_mm512_sub_ps(running, new_max));  // 0 on the first tile
  for (int j = 0; j < kKeyTile; ++j) x[j] = exp16(_mm512_sub_ps(x[j], new_max));
  // sum_lanes' order: j + (j + 16), then halves 8, 4, then (0 + 2) + (1 + 3).
  __m512 t[16];
  for (int j = 0; j < 16; ++j) t[j] = _mm512_add_ps(x[j], x[j + 16]);
  for (int j = 0; j < 8; ++j) t[j] = _mm512_add_ps(t[j], t[j + 8]);
  for (int j = 0; j < 4; ++j) t[j] = _mm512_add_ps(t[j], t[j + 4]);
  const __m512 total = _mm512_add_ps(_mm512_add_ps(t[0], t[2]), _mm512_add_ps(t[1], t[3]));
  const __m512 old_sum = _mm512_maskz_loadu_ps(active, sum);
  _mm512_mask_storeu_ps(sum, active, _mm512_fmadd_ps(old_sum, rescale, total));
  _mm512_mask_storeu_ps(max, active, new_max);
  alignas(64) float factors[16];
  _mm512_store_ps(factors, rescale);
  for (int64_t q = 0; q < rows; ++q) {
    float* acc = s.acc.data() + (r + q) * l.head_dim;
    const __m512 factor = _mm512_set1_ps(factors[q]);
    for (int64_t d = 0; d < l.head_dim; d += 16)
      _mm512_storeu_ps(acc + d, _mm512_mul_ps(_mm512_loadu_ps(acc + d), factor));
  }
  __m512i weights[2][16];
  transpose_16x16(reinterpret_cast<const __m512i*>(x), weights[0]);
  transpose_16x16(reinterpret_cast<const __m512i*>(x + 16), weights[1]);
  for (int64_t q = 0; q < rows; ++q) {
    const __m512bh pair =
        _mm512_cvtne2ps_pbh(_mm512_castsi512_ps(weights[1][q]), _mm512_castsi512_ps(weights[0][q]));
    _mm512_storeu_si512(s.weight_pairs.data() + (r + q) * kKeyTile / 2, (__m512i)pair);
  }
}

HIVE_PAGED_AMX void add_tile_amx(const Layout& l, const Item& item, int64_t kvh, int64_t tile_begin,
                                 int64_t tile_end, Scratch& s) {
  const int64_t hd = l.head_dim, pairs = hd / 2;
  const auto sees = [&](int64_t i) {
    const Seen at = seen(l, item, i, tile_begin, tile_end);
    return at.lo < at.hi;
  };
  // The queries that see the tile are consecutive, [i_lo, i_hi), and so
  // their first and last positions.
  int64_t i_lo = 0, i_hi = item.num_queries;
  while (i_lo < i_hi && !sees(i_lo)) ++i_lo;
  while (i_hi > i_lo && !sees(i_hi - 1)) --i_hi;
  if (i_lo >= i_hi) return;
  const int64_t item_lo = seen(l, item, i_lo, tile_begin, tile_end).lo,
                item_hi = seen(l, item, i_hi - 1, tile_begin, tile_end).hi;
  load_pairs(l, item, kvh, tile_begin, item_lo, item_hi, s);
  // Value pairs load_pairs left out hold another tile's values; every
  // weight there is +0, but a tile multiplies all 16 pairs.
  const int64_t t_lo = (item_lo - tile_begin) / 2, t_hi = (item_hi - tile_begin + 1) / 2;
  std::fill_n(s.value_pairs.data(), t_lo * 2 * hd, uint16_t{0});
  std::fill(s.value_pairs.begin() + t_hi * 2 * hd, s.value_pairs.end(), uint16_t{0});
  const int64_t row_lo = i_lo * l.group, row_hi = i_hi * l.group;
  const auto* keys = s.key_pairs.data();
  for (int64_t r = row_lo; r < row_hi; r += 16) {
    configure_rows(std::min<int64_t>(16, row_hi - r), s);
    _tile_zero(0);
    _tile_zero(1);
    const uint32_t* q = s.q_pairs.data() + r * pairs;
    for (int64_t c = 0; c < pairs; c += 16) {
      _tile_loadd(4, q + c, hd * 2);
      _tile_loadd(6, keys + c * kKeyTile, kKeyTile * 4);
      _tile_loadd(7, keys + c * kKeyTile + 16, kKeyTile * 4);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
    }
    _tile_stored(0, s.scores.data() + r * kKeyTile, kKeyTile * 4);
    _tile_stored(1, s.scores.data() + r * kKeyTile + 16, kKeyTile * 4);
  }
  for (int64_t r = row_lo; r < row_hi; r += 16) {
    alignas(64) int32_t lo[16] = {}, hi[16] = {};
    const int64_t rows = std::min<int64_t>(16, row_hi - r);
    for (int64_t q = 0; q < rows; ++q) {
      const Seen at = seen(l, item, (r + q) / l.group, tile_begin, tile_end);
      lo[q] = static_cast<int32_t>(at.lo - tile_begin);
      hi[q] = static_cast<int32_t>(at.hi - tile_begin);
    }
    softmax_rows(l, r, rows, lo, hi, s);
  }
  for (int64_t r = row_lo; r < row_hi; r += 16) {
    configure_rows(std::min<int64_t>(16, row_hi - r), s);
    _tile_loadd(4, s.weight_pairs.data() + r * kKeyTile / 2, kKeyTile * 2);
    float* acc = s.acc.data() + r * hd;
    for (int64_t d = 0; d < hd; d += 32) {
      _tile_loadd(0, acc + d, hd * 4);
      _tile_loadd(1, acc + d + 16, hd * 4);
      _tile_loadd(6, s.value_pairs.data() + d * 2, hd * 4);
      _tile_loadd(7, s.value_pairs.data() + (d + 16) * 2, hd * 4);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_stored(0, acc + d, hd * 4);
      _tile_stored(1, acc + d + 16, hd * 4);
    }
  }
}

}  // namespace

void bf16_pairs_scratch(int64_t states, int64_t head_dim, Scratch& s) {
  s.q_pairs.resize(static_cast<size_t>(states * head_dim / 2));
  s.key_pairs.resize(static_cast<size_t>(head_dim / 2 * kKeyTile));
  s.weight_pairs.resize(static_cast<size_t>(states * kKeyTile / 2));
  s.scores.resize(static_cast<size_t>(states * kKeyTile));
  s.value_pairs.resize(static_cast<size_t>(kKeyTile * head_dim));
}

HIVE_PAGED_AMX void release_tiles(Scratch& s) {
  if (s.amx_rows == 0) return;
  amx::release_tiles();
  s.amx_rows = 0;
}

HIVE_PAGED_BF16 void round_queries_bf16(const Layout& l, const Item& item, int64_t kvh,
                                        Scratch& s) {
  const int64_t values = l.group * l.head_dim;
  for (int64_t i = 0; i < item.num_queries; ++i) {
    const int64_t token = l.query_start[item.seq] + item.first_query + i;
    round_pairs(l.q + (token * l.num_heads + kvh * l.group) * l.head_dim, values,
                s.q_pairs.data() + i * values / 2);
  }
}

HIVE_PAGED_BF16 void add_tile_bf16(const Layout& l, const Item& item, int64_t kvh,
                                   int64_t tile_begin, int64_t tile_end, Scratch& s) {
  if (l.amx) return add_tile_amx(l, item, kvh, tile_begin, tile_end, s);
  const int64_t hd = l.head_dim, pairs = hd / 2;
  // The positions of the tile any query of the item sees: from the first
  // query's first to the last query's last.
  const Positions at = positions(l, item);
  const int64_t item_lo = std::max(at.first_seen, tile_begin);
  const int64_t item_hi = std::min(at.last + 1, tile_end);
  if (item_lo >= item_hi) return;
  load_pairs(l, item, kvh, tile_begin, item_lo, item_hi, s);
  for (int64_t i = 0; i < item.num_queries; ++i) {
    const auto [lo, hi] = seen(l, item, i, tile_begin, tile_end);
    if (lo >= hi) continue;
    const int64_t lane_lo = lo - tile_begin, lane_hi = hi - tile_begin;
    const uint32_t* q_pairs = s.q_pairs.data() + i * l.group * pairs;
    int64_t g = 0;
    for (; g + 4 <= l.group; g += 4)
      scores_of<4>(q_pairs + g * pairs, pairs, s.key_pairs.data(), s.scores.data() + g * kKeyTile);
    for (; g + 2 <= l.group; g += 2)
      scores_of<2>(q_pairs + g * pairs, pairs, s.key_pairs.data(), s.scores.data() + g * kKeyTile);
    for (; g < l.group; ++g)
      scores_of<1>(q_pairs + g * pairs, pairs, s.key_pairs.data(), s.scores.data() + g * kKeyTile);
    softmax_tile(l, i, lane_lo, lane_hi, s);
    // Lanes the query does not see hold weight +0.
    round_pairs(s.scores.data(), l.group * kKeyTile, s.weight_pairs.data());
    float* acc = s.acc.data() + i * l.group * hd;
    const int64_t t_lo = lane_lo / 2, t_hi = (lane_hi + 1) / 2;
    const uint32_t* weights = s.weight_pairs.data();
    const uint16_t* values = s.value_pairs.data();
    g = 0;
    for (; g + 4 <= l.group; g += 4)
      add_values<4>(acc + g * hd, hd, weights + g * kKeyTile / 2, values, t_lo, t_hi);
    for (; g + 2 <= l.group; g += 2)
      add_values<2>(acc + g * hd, hd, weights + g * kKeyTile / 2, values, t_lo, t_hi);
    for (; g < l.group; ++g)
      add_values<1>(acc + g * hd, hd, weights + g * kKeyTile / 2, values, t_lo, t_hi);
  }
}

#else

void bf16_pairs_scratch(int64_t, int64_t, Scratch&) {}
void round_queries_bf16(const Layout&, const Item&, int64_t, Scratch&) {}
void release_tiles(Scratch&) {}
void add_tile_bf16(const Layout&, const Item&, int64_t, int64_t, int64_t, Scratch&) {
  // Unreachable: the bf16 mode runs only on x86-64 CPUs with AVX512_BF16.
}

#endif

}  // namespace hive::cpu::paged
