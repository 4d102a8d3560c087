// The quantized matmul on AVX-512 with VNNI (vpdpbusd, vpdpwssd), in the
// order of quant_matmul.hpp. Per row and block it moves 34 (Q8_0) to 292
// (Q8_K) activation bytes from L1/L2; the weights, 18 to 210 bytes per block,
// come from memory once per task, so at m = 1 the roofline is the read
// bandwidth over the weight bytes, and from a few rows on the int8
// multiply-adds (64 per vpdpbusd).
#if defined(__x86_64__)
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/avx512_fold.hpp"
#include "kernels/cpu/intrinsics.hpp"
#include "kernels/quant/quant_gemm_kernels.hpp"
#include "kernels/quant/quant_unpack.hpp"

namespace hive {
namespace {

// A pair of Q8_0 or Q4_0 blocks (2c, 2c + 1; zero past the row) in
// registers: quant_unpack.hpp's PairQ8_0 less the |w| only AVX2 reads. At
// m = 1 made where it is used; from 2 rows on stored into scratch once per
// task (unpack_pair_tile) and read back by every row tile.
struct PairRegisters {
  __m512i w, offset;
  __m512 d;
};

inline PairRegisters load_pair(const QuantGemmArgs& a, const char* row, int64_t c) {
  const bool four_bit = a.type == GgmlType::q4_0;
  const int64_t blocks = a.k / kQK, block_bytes = four_bit ? 18 : 34;
  const char* first = row + 2 * c * block_bytes;
  const bool second = 2 * c + 1 < blocks;
  const __m256i w0 = block_quants(first, four_bit);
  const __m256i w1 = second ? block_quants(first + block_bytes, four_bit) : _mm256_setzero_si256();
  PairRegisters p;
  p.w = _mm512_inserti64x4(_mm512_castsi256_si512(w0), w1, 1);
  // -128 * the sum of each group of 4: 1 * w summed by vpdpbusd.
  const __m512i zero = _mm512_setzero_si512();
  const __m512i sums = _mm512_dpbusd_epi32(zero, _mm512_set1_epi8(1), p.w);
  p.offset = _mm512_sub_epi32(zero, _mm512_slli_epi32(sums, 7));
  const float d1 = second ? half_at(first + block_bytes) : 0.0f;
  p.d = _mm512_insertf32x8(_mm512_set1_ps(half_at(first)), _mm256_set1_ps(d1), 1);
  return p;
}

// A K block as block_sums reads it: quants in element order (64 per register),
// each pair's scale, each group of 16's min (or 32 * scale for Q6_K).
struct KRegisters {
  __m512i q[4], scale[4];
  __m256i min;
  float d, dmin;
};

// Q4_K and Q5_K (qh null for Q4_K) straight from the row into registers,
// the integers quant_unpack.hpp stores for AVX2, 64 bytes at a time.
inline KRegisters load_q4_q5_k(const char* block, const uint8_t* scales, const uint8_t* qs,
                               const uint8_t* qh) {
  KRegisters r;
  // The 8 scales, then the 8 mins, as int16.
  const __m256i scales_mins = _mm256_cvtepu8_epi16(k_scales_mins(scales));
  const __m512i packed = _mm512_castsi256_si512(scales_mins);
  // Each sub-block's min twice (one per group of 16): int16 8 + j.
  r.min = _mm256_permutexvar_epi16(
      _mm256_set_epi16(15, 15, 14, 14, 13, 13, 12, 12, 11, 11, 10, 10, 9, 9, 8, 8), scales_mins);
  const __m256i nibble = _mm256_set1_epi8(15);
  const __m512i one = _mm512_set1_epi8(1);
  const __m512i high_bits =
      qh ? _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh)))
         : _mm512_setzero_si512();
  for (int c = 0; c < 4; ++c) {
    // Bytes 32c..32c+31: sub-block 2c in the low nibbles, 2c + 1 in the high.
    const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * c));
    const __m256i low = _mm256_and_si256(bytes, nibble);
    const __m256i high = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), nibble);
    r.q[c] = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
    if (qh) {
      // Bit j of qh[l] is bit 4 of sub-block j's element l.
      const __m512i shifts =
          _mm512_inserti64x4(_mm512_set1_epi16(static_cast<int16_t>(2 * c)),
                             _mm256_set1_epi16(static_cast<int16_t>(2 * c + 1)), 1);
      const __m512i bit = _mm512_and_si512(_mm512_srlv_epi16(high_bits, shifts), one);
      r.q[c] = _mm512_or_si512(r.q[c], _mm512_slli_epi16(bit, 4));
    }
    // Scale of sub-block 2c on the first 16 pairs, 2c + 1 on the rest.
    const __m512i index = _mm512_inserti64x4(_mm512_set1_epi16(static_cast<int16_t>(2 * c)),
                                             _mm256_set1_epi16(static_cast<int16_t>(2 * c + 1)), 1);
    r.scale[c] = _mm512_permutexvar_epi16(index, packed);
  }
  r.d = half_at(block);
  r.dmin = half_at(block + 2);
  return r;
}

inline KRegisters load_q4_k(const char* row, int64_t b) {
  const char* block = row + b * static_cast<int64_t>(sizeof(BlockQ4_K));
  const auto* bytes = reinterpret_cast<const uint8_t*>(block);
  return load_q4_q5_k(block, bytes + offsetof(BlockQ4_K, scales), bytes + offsetof(BlockQ4_K, qs),
                      nullptr);
}

inline KRegisters load_q5_k(const char* row, int64_t b) {
  const char* block = row + b * static_cast<int64_t>(sizeof(BlockQ5_K));
  const auto* bytes = reinterpret_cast<const uint8_t*>(block);
  return load_q4_q5_k(block, bytes + offsetof(BlockQ5_K, scales), bytes + offsetof(BlockQ5_K, qs),
                      bytes + offsetof(BlockQ5_K, qh));
}

inline KRegisters load_q6_k(const char* row, int64_t b) {
  const char* block = row + b * static_cast<int64_t>(sizeof(BlockQ6_K));
  const auto* ql = reinterpret_cast<const uint8_t*>(block + offsetof(BlockQ6_K, ql));
  const auto* qh = reinterpret_cast<const uint8_t*>(block + offsetof(BlockQ6_K, qh));
  KRegisters r;
  // The 16 int8 scales as int16, and group g's pair scales at 8g .. 8g + 7.
  const __m256i scales16 = _mm256_cvtepi8_epi16(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + offsetof(BlockQ6_K, scales))));
  const __m512i scales = _mm512_castsi256_si512(scales16);
  const __m512i nibble = _mm512_set1_epi8(15), two_bits = _mm512_set1_epi8(3);
  for (int c = 0; c < 4; ++c) {
    // Elements 64c .. 64c + 63 are half h = c / 2, k = 2 (c % 2) and the
    // next: low nibbles of ql[64h ..] for c even, high ones for c odd, and
    // bits 2k, 2k + 1 of qh[32h + l].
    const int h = c / 2, k = 2 * (c % 2);
    const __m512i lows = _mm512_loadu_si512(ql + 64 * h);
    const __m512i low = _mm512_and_si512(c % 2 ? _mm512_srli_epi16(lows, 4) : lows, nibble);
    const __m512i highs =
        _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh + 32 * h)));
    const __m512i shifts =
        _mm512_inserti64x4(_mm512_set1_epi16(static_cast<int16_t>(2 * k)),
                           _mm256_set1_epi16(static_cast<int16_t>(2 * k + 2)), 1);
    const __m512i high = _mm512_and_si512(_mm512_srlv_epi16(highs, shifts), two_bits);
    r.q[c] = _mm512_or_si512(low, _mm512_slli_epi16(high, 4));
    // Groups 4c .. 4c + 3, 8 pairs each.
    const __m512i group = _mm512_set_epi16(
        4 * c + 3, 4 * c + 3, 4 * c + 3, 4 * c + 3, 4 * c + 3, 4 * c + 3, 4 * c + 3, 4 * c + 3,
        4 * c + 2, 4 * c + 2, 4 * c + 2, 4 * c + 2, 4 * c + 2, 4 * c + 2, 4 * c + 2, 4 * c + 2,
        4 * c + 1, 4 * c + 1, 4 * c + 1, 4 * c + 1, 4 * c + 1, 4 * c + 1, 4 * c + 1, 4 * c + 1,
        4 * c, 4 * c, 4 * c, 4 * c, 4 * c, 4 * c, 4 * c, 4 * c);
    r.scale[c] = _mm512_permutexvar_epi16(group, scales);
  }
  r.min = _mm256_slli_epi16(scales16, 5);
  r.d = half_at(block + offsetof(BlockQ6_K, d));
  r.dmin = 0;
  return r;
}

inline KRegisters load_k(const QuantGemmArgs& a, const char* row, int64_t b) {
  if (a.type == GgmlType::q4_k) return load_q4_k(row, b);
  if (a.type == GgmlType::q5_k) return load_q5_k(row, b);
  return load_q6_k(row, b);
}

// ---- Register tiles for m > 1 -------------------------------------------
//
// (Q8_0 / Q4_0; the K-quants' tiles are quant_gemm_k_avx512.cpp's.)
// A tile is kTileColumns output columns by kTileRows rows. Its columns'
// weight rows are unpacked once into scratch (in registers, then stored),
// and every row tile of the task reads them from there: the unpacking is
// paid once per task rather than once per row. Inside a tile each weight
// register meets kTileRows activation rows and each activation register
// kTileColumns weight columns, the accumulators staying in registers.
//
// A tile short of columns repeats its last one, whose repeated outputs are
// computed and dropped; one short of rows leaves them out. No lane reads
// another's values, so an output's bits do not depend on the tile it shares.
static_assert(kTileColumns == 4, "k_row's reduction puts one column in each 128-bit lane");

// Column slot j of the tile in scratch: columns past `columns` repeat the last.
inline int tile_slot(int j, int columns) {
  return j < columns ? j : columns - 1;
}

// Q8_0 / Q4_0: lanes 0-7 of an output's accumulator take even blocks and
// 8-15 odd ones: a pair of blocks is one 64-byte load of x, multiplied as
// (x + 128) . w - 128 sum(w) since vpdpbusd wants its first factor unsigned.
inline __m512i flipped_x(const int8_t* x_qs) {
  return _mm512_xor_si512(_mm512_loadu_si512(x_qs), _mm512_set1_epi8(-128));
}

// The pair's two activation scales, each over its 8 lanes.
inline __m512 pair_x_d(const float* x_d) {
  const __m512i halves = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m128d d2 = _mm_load_sd(reinterpret_cast<const double*>(x_d));
  return _mm512_permutexvar_ps(halves, _mm512_castps128_ps512(_mm_castpd_ps(d2)));
}

inline __m512 pair_step(const PairRegisters& w, __m512i x, __m512 x_d, __m512 acc) {
  const __m512i sums = _mm512_dpbusd_epi32(w.offset, x, w.w);
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(w.d, x_d), acc);
}

// m = 1, Q8_0 / Q4_0: one column, its pairs straight into registers
// against one activation register each, folded by fold(). One column at a
// time is one sequential stream; four side by side read slower.
void pair_column(const QuantGemmArgs& a, int64_t column, StreamAhead& ahead) {
  const int64_t pairs = a.x_blocks / 2;
  const int64_t pair_bytes = a.type == GgmlType::q4_0 ? 36 : 68;
  const char* row = a.w + column * a.w_row_bytes;
  __m512 acc = _mm512_setzero_ps();
  for (int64_t c = 0; c < pairs; ++c) {
    ahead.upto(row + (c + 1) * pair_bytes);
    acc = pair_step(load_pair(a, row, c), flipped_x(a.x_qs + 64 * c), pair_x_d(a.x_d + 2 * c), acc);
  }
  a.out[column] = cpu::fold(acc);
}

// Q8_0 / Q4_0: the tile's weight rows as PairQ8_0 (its |w| left unset), pair
// c of slot j at pairs[j * pairs_per_row + c].
void unpack_pair_tile(const QuantGemmArgs& a, int64_t column0, int columns, const QuantScratch& s) {
  const int64_t pairs = a.x_blocks / 2;
  for (int j = 0; j < columns; ++j) {
    const char* row = a.w + (column0 + j) * a.w_row_bytes;
    for (int64_t c = 0; c < pairs; ++c) {
      const PairRegisters w = load_pair(a, row, c);
      PairQ8_0& out = s.pairs[j * pairs + c];
      _mm512_store_si512(out.w, w.w);
      _mm512_store_si512(out.offset, w.offset);
      _mm512_store_ps(out.d, w.d);
    }
  }
}

// Q8_0 / Q4_0: per pair, kTileRows activation registers against each of the
// tile's weight pairs; 16 accumulators of 16 lanes, each output's lanes as
// pair_step makes them, folded as fold() does.
void pair_tile(const QuantGemmArgs& a, int64_t column0, int columns, const QuantScratch& s) {
  const int64_t pairs = a.x_blocks / 2;
  const PairQ8_0* slot[kTileColumns];
  for (int j = 0; j < kTileColumns; ++j) slot[j] = s.pairs + tile_slot(j, columns) * pairs;
  by_row_tiles(a, [&](auto tile_rows, int64_t first) {
    constexpr int kRows = decltype(tile_rows)::value;
    const int8_t* x_qs = a.x_qs + first * pairs * 64;
    const float* x_d = a.x_d + first * pairs * 2;
    __m512 acc[kTileColumns][kRows];
    for (auto& column : acc)
      for (__m512& v : column) v = _mm512_setzero_ps();
    for (int64_t c = 0; c < pairs; ++c) {
      __m512i x[kRows];
      __m512 xd[kRows];
      for (int r = 0; r < kRows; ++r) {
        x[r] = flipped_x(x_qs + (r * pairs + c) * 64);
        xd[r] = pair_x_d(x_d + (r * pairs + c) * 2);
      }
      for (int j = 0; j < kTileColumns; ++j) {
        const PairQ8_0& unpacked = slot[j][c];
        PairRegisters w;
        w.w = _mm512_load_si512(unpacked.w);
        w.offset = _mm512_load_si512(unpacked.offset);
        w.d = _mm512_load_ps(unpacked.d);
        for (int r = 0; r < kRows; ++r) acc[j][r] = pair_step(w, x[r], xd[r], acc[j][r]);
      }
    }
    for (int j = 0; j < columns; ++j) {
      // Rows past kRows fold a repeat of the last, dropped.
      const auto row = [&](int r) { return acc[j][std::min(r, kRows - 1)]; };
      alignas(16) float folded[4];
      _mm_store_ps(folded, cpu::fold4(row(0), row(1), row(2), row(3)));
      for (int r = 0; r < kRows; ++r) a.out[(first + r) * a.n + column0 + j] = folded[r];
    }
  });
}

// Four rows' int32 vectors summed within each 128-bit lane: lane L of the
// result holds [row 0, row 1, row 2, row 3]'s sums of their lane L.
inline __m512i sum_rows(const __m512i (&p)[kTileRows]) {
  const __m512i s01 =
      _mm512_add_epi32(_mm512_unpacklo_epi32(p[0], p[1]), _mm512_unpackhi_epi32(p[0], p[1]));
  const __m512i s23 =
      _mm512_add_epi32(_mm512_unpacklo_epi32(p[2], p[3]), _mm512_unpackhi_epi32(p[2], p[3]));
  return _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
}

// One K block of one column against one row's Q8_K block, the exact sums P
// = sum of pair_scale * (q . x) and M = sum of min * bsums as one vector for
// the trees: Q6_K's 16 lanes sum to its A = P - M; Q4_K / Q5_K's lanes 0-7
// sum to P (A) and 8-15 to M (B).
inline __m512i block_sums(const __m512i (&q)[4], const __m512i (&scale)[4], __m256i min,
                          const BlockQ8_K& x, bool offset_in_a) {
  __m512i v = _mm512_setzero_si512();
  for (int c = 0; c < 4; ++c)
    v = _mm512_dpwssd_epi32(v, _mm512_maddubs_epi16(q[c], _mm512_loadu_si512(x.qs + 64 * c)),
                            scale[c]);
  const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bsums));
  if (offset_in_a) {  // - min * bsums into the low 8 lanes
    const __m256i minus = _mm256_sub_epi16(_mm256_setzero_si256(), min);
    return _mm512_dpwssd_epi32(v, _mm512_zextsi256_si512(bsums), _mm512_zextsi256_si512(minus));
  }
  const __m256i half = _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
  return _mm512_inserti64x4(_mm512_castsi256_si512(half), _mm256_madd_epi16(bsums, min), 1);
}

// m = 1, K-quants: 4 columns' block sums through one sum_rows, the 4
// outputs scaled in one 128-bit vector.
void k_row(const QuantGemmArgs& a, int64_t column0, int columns) {
  const int64_t blocks = a.k / kQKK;
  const bool offset_in_a = a.type == GgmlType::q6_k;
  const char* rows[kTileColumns];
  for (int j = 0; j < kTileColumns; ++j)
    rows[j] = a.w + (column0 + tile_slot(j, columns)) * a.w_row_bytes;
  // The four rows are one contiguous stream read at four points: each
  // point asks for the lines past it, which lie in the rows of later tiles.
  const int64_t block_bytes = a.w_row_bytes / blocks;
  StreamAhead ahead[kTileColumns];
  for (int j = 0; j < kTileColumns; ++j) ahead[j].next = rows[j] + kStreamAhead;
  const __m128 sign = _mm_set1_ps(-0.0f);
  __m128 acc = _mm_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const BlockQ8_K& x = a.x_k[b];
    __m512i p[kTileColumns];
    alignas(16) float d[kTileColumns], dmin[kTileColumns];
    for (int j = 0; j < kTileColumns; ++j) {
      ahead[j].upto(rows[j] + (b + 1) * block_bytes);
      const KRegisters u = load_k(a, rows[j], b);
      p[j] = block_sums(u.q, u.scale, u.min, x, offset_in_a);
      d[j] = u.d;
      dmin[j] = u.dmin;
    }
    // 128-bit lane L: the 4 columns' sums of their lane L.
    const __m512i s = sum_rows(p);
    const __m128i s01 = _mm_add_epi32(_mm512_castsi512_si128(s), _mm512_extracti32x4_epi32(s, 1));
    const __m128i s23 =
        _mm_add_epi32(_mm512_extracti32x4_epi32(s, 2), _mm512_extracti32x4_epi32(s, 3));
    const __m128 xd = _mm_set1_ps(x.d);
    const __m128 scale = _mm_mul_ps(_mm_load_ps(d), xd);
    if (offset_in_a) {
      acc = _mm_fmadd_ps(scale, _mm_cvtepi32_ps(_mm_add_epi32(s01, s23)), acc);
    } else {
      acc = _mm_fmadd_ps(scale, _mm_cvtepi32_ps(s01), acc);
      const __m128 scale_min = _mm_xor_ps(_mm_mul_ps(_mm_load_ps(dmin), xd), sign);
      acc = _mm_fmadd_ps(scale_min, _mm_cvtepi32_ps(s23), acc);
    }
  }
  alignas(16) float sums[4];
  _mm_store_ps(sums, acc);
  for (int j = 0; j < columns; ++j) a.out[column0 + j] = sums[j];
}

}  // namespace

void quant_gemm_columns_avx512_vnni(const QuantGemmArgs& args, int64_t column_begin,
                                    int64_t column_end, const QuantScratch& scratch) {
  const bool k_quant = is_k_quant(args.type);
  if (args.m == 1 && !k_quant) {  // decode: the weights straight into registers, no scratch
    StreamAhead ahead{args.w + column_begin * args.w_row_bytes + kStreamAhead};
    for (int64_t j = column_begin; j < column_end; ++j) pair_column(args, j, ahead);
    return;
  }
  if (args.m > 1 && k_quant)  // lanes as columns, quant_gemm_k_avx512.cpp
    return quant_gemm_k_columns_avx512_vnni(args, column_begin, column_end, scratch);
  for (int64_t j = column_begin; j < column_end; j += kTileColumns) {
    const int columns = static_cast<int>(std::min<int64_t>(kTileColumns, column_end - j));
    if (args.m == 1) {
      k_row(args, j, columns);
    } else {
      unpack_pair_tile(args, j, columns, scratch);
      pair_tile(args, j, columns, scratch);
    }
  }
}

}  // namespace hive
#endif  // __x86_64__
