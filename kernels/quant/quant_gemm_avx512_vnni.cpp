// The quantized matmul on AVX-512 with VNNI (vpdpbusd, vpdpwssd), in the
// order of quant_matmul.hpp. Per row and block it moves 34 (Q8_0) to 292
// (Q8_K) activation bytes from L1/L2; the weights, 18 to 210 bytes per block,
// come from memory once per task, so at m = 1 the roofline is the read
// bandwidth over the weight bytes, and from a few rows on the int8
// multiply-adds (64 per vpdpbusd).
#if defined(__x86_64__)
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/intrinsics.hpp"
#include "kernels/quant/quant_block_sums.hpp"
#include "kernels/quant/quant_gemm_kernels.hpp"
#include "kernels/quant/quant_unpack.hpp"

namespace hive {
namespace {

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

// ---- Q8_0 / Q4_0 ----------------------------------------------------------
//
// vpdpbusd wants its first factor unsigned: it multiplies w + 128 by x,
// starting from x_offset = -128 * the block's sum of x, so each block's sum
// is exact in int32 (quant_gemm_kernels.hpp).

// Q5_0 / Q5_1's quants 0..31: the nibbles of qs, 16 added where bit i of
// qh is set.
inline __m256i q5_quants(const char* block, bool with_min) {
  const char* qh = block + (with_min ? 4 : 2);
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qh + 4));
  const __m128i low = _mm_and_si128(bytes, _mm_set1_epi8(15));
  const __m128i high = _mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(15));
  uint32_t bits = 0;
  std::memcpy(&bits, qh, 4);
  return _mm256_or_si256(_mm256_set_m128i(high, low),
                         _mm256_maskz_mov_epi8(bits, _mm256_set1_epi8(16)));
}

// The signed values the order multiplies: Q8_0's quants, Q4_0's nibbles
// less 8, Q5_0's quants less 16, Q5_1's quants as they are.
inline __m256i signed_quants(const char* block, GgmlType type) {
  if (type == GgmlType::q5_0) return _mm256_sub_epi8(q5_quants(block, false), _mm256_set1_epi8(16));
  if (type == GgmlType::q5_1) return q5_quants(block, true);
  return block_quants(block, type == GgmlType::q4_0);
}

inline __m256i flipped_quants(const char* block, GgmlType type) {
  return _mm256_xor_si256(signed_quants(block, type), _mm256_set1_epi8(-128));
}

// Decode's unsigned factor: w + 128 for Q8_0, and for the 4- and 5-bit
// types their quants as they are, w + 8 (Q4_0), w + 16 (Q5_0) or w (Q5_1),
// with x_offset >> offset_shift(type) to start from (none for Q5_1).
inline __m256i unsigned_quants(const char* block, GgmlType type) {
  if (type == GgmlType::q5_0 || type == GgmlType::q5_1)
    return q5_quants(block, type == GgmlType::q5_1);
  if (type != GgmlType::q4_0) return flipped_quants(block, type);
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
  const __m128i low = _mm_and_si128(bytes, _mm_set1_epi8(15));
  const __m128i high = _mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(15));
  return _mm256_set_m128i(high, low);
}

// x_offset = -128 * the sum of x, shifted to -8 (Q4_0) or -16 (Q5_0) times it.
inline int offset_shift(GgmlType type) {
  return type == GgmlType::q4_0 ? 4 : type == GgmlType::q5_0 ? 3 : 0;
}

// The f16 scales of the 8 blocks from `block` on, in registers (inserted
// one by one: 8 narrow stores read back as one vector would wait on them).
inline __m128i block_scales(const char* block, int64_t block_bytes) {
  const auto half = [&](int t) {
    uint16_t bits = 0;
    std::memcpy(&bits, block + t * block_bytes, 2);
    return bits;
  };
  __m128i v = _mm_cvtsi32_si128(half(0));
  v = _mm_insert_epi16(v, half(1), 1);
  v = _mm_insert_epi16(v, half(2), 2);
  v = _mm_insert_epi16(v, half(3), 3);
  v = _mm_insert_epi16(v, half(4), 4);
  v = _mm_insert_epi16(v, half(5), 5);
  v = _mm_insert_epi16(v, half(6), 6);
  return _mm_insert_epi16(v, half(7), 7);
}

inline int32_t dword_at(const int8_t* p) {
  int32_t v = 0;
  std::memcpy(&v, p, 4);
  return v;
}

// Four vectors of two blocks' 8 lanes each (lanes 0-7 and 8-15): the 8
// blocks' totals, the first blocks of the 4 vectors in lanes 0-3 and the
// second ones in 4-7 (integer adds: exact in any order).
inline __m256i pair_totals(const __m512i (&v)[4]) {
  const __m512i s01 =
      _mm512_add_epi32(_mm512_unpacklo_epi32(v[0], v[1]), _mm512_unpackhi_epi32(v[0], v[1]));
  const __m512i s23 =
      _mm512_add_epi32(_mm512_unpacklo_epi32(v[2], v[3]), _mm512_unpackhi_epi32(v[2], v[3]));
  // 128-bit lane L: [v0, v1, v2, v3]'s sums of their lane L.
  const __m512i s =
      _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
  // Lanes 0 + 1 (first blocks), 2 + 3 (second blocks).
  const __m512i halves =
      _mm512_add_epi32(_mm512_shuffle_i32x4(s, s, 0x88), _mm512_shuffle_i32x4(s, s, 0xdd));
  return _mm512_castsi512_si256(halves);
}

// m = 1: kColumns columns side by side, their blocks straight into
// registers 8 at a time, the exact sums through pair_totals, then each
// column's fmas in turn. Each column's fmas are one dependent chain, which
// the other columns' chains overlap; each column is a stream, asking for
// its lines kStreamAhead ahead. Q8_0 takes 2 (more streams read slower),
// Q4_0, bound by its work per byte rather than by reading, 4.
template <int kColumns>
void q8_columns(const QuantGemmArgs& a, int64_t column0) {
  const GgmlType type = a.type;
  const bool with_min = type == GgmlType::q5_1;
  const int64_t blocks = a.x_blocks, block_bytes = ggml_type_info(type).block_bytes;
  const int shift = offset_shift(type);
  const char* rows[kColumns];
  StreamAhead ahead[kColumns];
  for (int c = 0; c < kColumns; ++c) {
    rows[c] = a.w + (column0 + c) * a.w_row_bytes;
    ahead[c].next = rows[c] + kStreamAhead;
  }
  // Block order from pair_totals' first blocks then second ones.
  const __m256i in_order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  float s[kColumns] = {};
  int64_t b = 0;
  for (; b + 8 <= blocks; b += 8) {
    __m512i x[4];
    for (int t = 0; t < 4; ++t) x[t] = _mm512_loadu_si512(a.x_qs + 32 * (b + 2 * t));
    const __m256i x_offset = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.x_offset + b));
    // Q5_1 starts from zero and adds its minimum times the sum of x.
    const __m256i offsets =
        with_min ? _mm256_setzero_si256() : _mm256_sra_epi32(x_offset, _mm_cvtsi32_si128(shift));
    const __m256 x_sums = _mm256_cvtepi32_ps(
        _mm256_srai_epi32(_mm256_sub_epi32(_mm256_setzero_si256(), x_offset), 7));
    const __m256 x_d = _mm256_loadu_ps(a.x_d + b);
    __m256 exact[kColumns], d[kColumns], m[kColumns];
    for (int c = 0; c < kColumns; ++c) {
      const char* row = rows[c];
      ahead[c].upto(row + (b + 8) * block_bytes);
      __m512i sums[4];
      for (int t = 0; t < 4; ++t) {
        const int64_t first = b + 2 * t;
        const __m512i w = _mm512_inserti64x4(
            _mm512_castsi256_si512(unsigned_quants(row + first * block_bytes, type)),
            unsigned_quants(row + (first + 1) * block_bytes, type), 1);
        sums[t] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, x[t]);
      }
      const __m256i totals = _mm256_permutevar8x32_epi32(pair_totals(sums), in_order);
      exact[c] = _mm256_cvtepi32_ps(_mm256_add_epi32(totals, offsets));
      d[c] = _mm256_mul_ps(_mm256_cvtph_ps(block_scales(row + b * block_bytes, block_bytes)), x_d);
      if (with_min)
        m[c] = _mm256_mul_ps(_mm256_cvtph_ps(block_scales(row + b * block_bytes + 2, block_bytes)),
                             x_d);
    }
    for (int c = 0; c < kColumns; ++c)
      s[c] = with_min ? fma_in_order(exact[c], d[c], x_sums, m[c], s[c])
                      : fma_in_order(exact[c], d[c], s[c]);
  }
  for (; b < blocks; ++b) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.x_qs + 32 * b));
    const int32_t offset = with_min ? 0 : a.x_offset[b] / (1 << shift);
    for (int c = 0; c < kColumns; ++c) {
      const char* block = rows[c] + b * block_bytes;
      ahead[c].upto(block + block_bytes);
      const __m256i sums =
          _mm256_dpbusd_epi32(_mm256_setzero_si256(), unsigned_quants(block, type), x);
      s[c] =
          std::fma(static_cast<float>(lane_total(sums) + offset), half_at(block) * a.x_d[b], s[c]);
      if (with_min)
        s[c] =
            std::fma(static_cast<float>(-a.x_offset[b] / 128), half_at(block + 2) * a.x_d[b], s[c]);
    }
  }
  for (int c = 0; c < kColumns; ++c) a.out[column0 + c] = s[c];
}

// Columns [column0, column0 + columns) as LaneBlockQ8_0s, block b at
// out[b]: each block's 16 rows of 8 dwords transposed to 8 registers.
// One instantiation per type, so that no type test sits in the loop.
template <GgmlType kType>
void unpack_lane_blocks(const QuantGemmArgs& a, int64_t column0, int columns, LaneBlockQ8_0* out) {
  const int64_t block_bytes = ggml_type_info(kType).block_bytes;
  constexpr bool with_min = kType == GgmlType::q5_1;
  const __m512i low_lanes = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
  const __m512i high_lanes = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
  for (int64_t b = 0; b < a.x_blocks; ++b) {
    __m256i q[kLaneColumns];
    alignas(32) uint16_t d[kLaneColumns] = {}, m[kLaneColumns] = {};
    for (int j = 0; j < kLaneColumns; ++j) {
      q[j] = _mm256_set1_epi8(-128);  // zero weights past the columns
      if (j >= columns) continue;
      const char* block = a.w + (column0 + j) * a.w_row_bytes + b * block_bytes;
      q[j] = flipped_quants(block, kType);
      std::memcpy(&d[j], block, 2);
      if constexpr (with_min) std::memcpy(&m[j], block + 2, 2);
    }
    // z[j]: columns j and j + 8; 128-bit lanes [j's dwords 0-3, 4-7, j + 8's 0-3, 4-7].
    __m512i z[8], t[8], u[8];
    for (int j = 0; j < 8; ++j)
      z[j] = _mm512_inserti64x4(_mm512_castsi256_si512(q[j]), q[j + 8], 1);
    for (int j = 0; j < 8; j += 2) {
      t[j] = _mm512_unpacklo_epi32(z[j], z[j + 1]);
      t[j + 1] = _mm512_unpackhi_epi32(z[j], z[j + 1]);
    }
    // u[h + c]: 128-bit lanes [columns h .. h + 3's dwords c, c + 4, columns
    // h + 8 .. h + 11's dwords c, c + 4].
    for (int h = 0; h < 8; h += 4) {
      u[h + 0] = _mm512_unpacklo_epi64(t[h], t[h + 2]);
      u[h + 1] = _mm512_unpackhi_epi64(t[h], t[h + 2]);
      u[h + 2] = _mm512_unpacklo_epi64(t[h + 1], t[h + 3]);
      u[h + 3] = _mm512_unpackhi_epi64(t[h + 1], t[h + 3]);
    }
    LaneBlockQ8_0& o = out[b];
    for (int c = 0; c < 4; ++c) {
      _mm512_store_si512(o.w[c], _mm512_permutex2var_epi64(u[c], low_lanes, u[c + 4]));
      _mm512_store_si512(o.w[c + 4], _mm512_permutex2var_epi64(u[c], high_lanes, u[c + 4]));
    }
    _mm512_store_ps(o.d, _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<__m256i*>(d))));
    if constexpr (with_min)
      _mm512_store_ps(o.m, _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<__m256i*>(m))));
  }
}

// Rows per Q8_0 / Q4_0 register tile: kLaneRows accumulators of each kind
// beside the block's 8 weight registers and its scales.
constexpr int kLaneRows = 8;

// Rows [first, first + Rows) against the unpacked block columns: per block
// and row one int32 accumulator from x_offset through 8 vpdpbusd (each
// broadcasting one dword of x), then that row's fma on all 16 columns.
template <int Rows, bool kMin>
void lane_tile(const QuantGemmArgs& a, const LaneBlockQ8_0* u, int64_t column0, int columns,
               int64_t first) {
  const int64_t blocks = a.x_blocks;
  const int8_t* x_qs = a.x_qs + first * blocks * 32;
  const float* x_d = a.x_d + first * blocks;
  const int32_t* x_offset = a.x_offset + first * blocks;
  __m512 acc[Rows];
  for (__m512& v : acc) v = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    __m512i w[8];
    for (int g = 0; g < 8; ++g) w[g] = _mm512_load_si512(u[b].w[g]);
    const __m512 w_d = _mm512_load_ps(u[b].d);
    __m512i sums[Rows];
    for (int r = 0; r < Rows; ++r) sums[r] = _mm512_set1_epi32(x_offset[r * blocks + b]);
    for (int g = 0; g < 8; ++g)
      for (int r = 0; r < Rows; ++r)
        sums[r] = _mm512_dpbusd_epi32(
            sums[r], w[g], _mm512_set1_epi32(dword_at(x_qs + (r * blocks + b) * 32 + 4 * g)));
    for (int r = 0; r < Rows; ++r)
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[r]),
                               _mm512_mul_ps(w_d, _mm512_set1_ps(x_d[r * blocks + b])), acc[r]);
    if constexpr (kMin) {  // Q5_1: its minimum times the sum of x, after each block
      const __m512 w_m = _mm512_load_ps(u[b].m);
      for (int r = 0; r < Rows; ++r)
        acc[r] =
            _mm512_fmadd_ps(_mm512_set1_ps(static_cast<float>(-x_offset[r * blocks + b] / 128)),
                            _mm512_mul_ps(w_m, _mm512_set1_ps(x_d[r * blocks + b])), acc[r]);
    }
  }
  const auto mask = static_cast<__mmask16>((1u << columns) - 1);
  for (int r = 0; r < Rows; ++r)
    _mm512_mask_storeu_ps(a.out + (first + r) * a.n + column0, mask, acc[r]);
}

// Rows past a whole tile: one instantiation per count.
template <int Rows, bool kMin>
void lane_tile_rows(const QuantGemmArgs& a, const LaneBlockQ8_0* u, int64_t column0, int columns,
                    int64_t first, int rows) {
  if constexpr (Rows > 1)
    if (rows < Rows) return lane_tile_rows<Rows - 1, kMin>(a, u, column0, columns, first, rows);
  lane_tile<Rows, kMin>(a, u, column0, columns, first);
}

// m > 1: the task's columns kLaneColumns at a time, unpacked once, against
// every row tile.
void q8_lanes(const QuantGemmArgs& a, int64_t column_begin, int64_t column_end,
              const QuantScratch& s) {
  for (int64_t j = column_begin; j < column_end; j += kLaneColumns) {
    const int columns = static_cast<int>(std::min<int64_t>(kLaneColumns, column_end - j));
    switch (a.type) {
      case GgmlType::q4_0:
        unpack_lane_blocks<GgmlType::q4_0>(a, j, columns, s.q8_lanes);
        break;
      case GgmlType::q5_0:
        unpack_lane_blocks<GgmlType::q5_0>(a, j, columns, s.q8_lanes);
        break;
      case GgmlType::q5_1:
        unpack_lane_blocks<GgmlType::q5_1>(a, j, columns, s.q8_lanes);
        break;
      default:
        unpack_lane_blocks<GgmlType::q8_0>(a, j, columns, s.q8_lanes);
    }
    for (int64_t first = 0; first < a.m; first += kLaneRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kLaneRows, a.m - first));
      if (a.type == GgmlType::q5_1) {
        lane_tile_rows<kLaneRows, true>(a, s.q8_lanes, j, columns, first, rows);
      } else {
        lane_tile_rows<kLaneRows, false>(a, s.q8_lanes, j, columns, first, rows);
      }
    }
  }
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
    int64_t j = column_begin;
    if (args.type != GgmlType::q8_0)  // four chains: 4- and 5-bit types unpack more per byte read
      for (; j + 4 <= column_end; j += 4) q8_columns<4>(args, j);
    for (; j + 2 <= column_end; j += 2) q8_columns<2>(args, j);
    if (j < column_end) q8_columns<1>(args, j);
    return;
  }
  if (!k_quant) return q8_lanes(args, column_begin, column_end, scratch);
  if (args.m > 1)  // lanes as columns, quant_gemm_k_avx512.cpp
    return quant_gemm_k_columns_avx512_vnni(args, column_begin, column_end, scratch);
  for (int64_t j = column_begin; j < column_end; j += kTileColumns)
    k_row(args, j, static_cast<int>(std::min<int64_t>(kTileColumns, column_end - j)));
}

}  // namespace hive
#endif  // __x86_64__
