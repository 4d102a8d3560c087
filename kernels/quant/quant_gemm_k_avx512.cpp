// K-quants (Q4_K, Q5_K, Q6_K) from m = 2 rows on, AVX-512 with VNNI, in the
// order of quant_matmul.hpp. The lanes of a vector are 16 output columns:
// the task's weight rows are unpacked once into ColumnBlockK (layout in
// quant_gemm_kernels.hpp), and each row's activations are broadcast, 4
// bytes at a time, against them. So an output's exact integers A and B
// gather in its own lane, with no reduction across lanes, and the block's
// scaling is the order's two fma on 16 outputs at once.
//
// Per row, block and 16 columns: 64 vpdpbusd (64 multiply-adds each) for
// the sums S of the quants, 8 (Q4_K, Q5_K) or 16 (Q6_K) exact int32
// multiplies by the scales, 8 vpdpwssd for the mins against the bsums. The
// unpacked block (5.8 KB) comes from L2 once per row tile and the
// activations' dwords from L1, so from a few rows on the bound is the
// vector ports: the vpdpbusd, and beside them the multiplies by the
// scales. Unpacking (a transpose of the packed quants per block) is paid
// once per task.
#if defined(__x86_64__)
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <utility>

#include "kernels/cpu/intrinsics.hpp"
#include "kernels/quant/quant_gemm_kernels.hpp"
#include "kernels/quant/quant_unpack.hpp"

namespace hive {
namespace {

// The 16 columns' blocks: slot c's at base + offset lane c (int32, as
// vpgatherdd takes it: 15 weight rows are far below 2 GB).
struct Columns {
  const char* block[kKColumns];
  const char* base;
  __m512i offset;
};

// 16 vectors of 16 dwords transposed: out[t] lane c = in[c] lane t.
inline void transpose16(const __m512i (&in)[16], __m512i (&out)[16]) {
  __m512i a[16], b[16];
  for (int i = 0; i < 8; ++i) {
    a[2 * i] = _mm512_unpacklo_epi32(in[2 * i], in[2 * i + 1]);
    a[2 * i + 1] = _mm512_unpackhi_epi32(in[2 * i], in[2 * i + 1]);
  }
  // b[4 i + p], 128-bit lane L: element 4 L + p of rows 4 i .. 4 i + 3.
  for (int i = 0; i < 4; ++i) {
    b[4 * i] = _mm512_unpacklo_epi64(a[4 * i], a[4 * i + 2]);
    b[4 * i + 1] = _mm512_unpackhi_epi64(a[4 * i], a[4 * i + 2]);
    b[4 * i + 2] = _mm512_unpacklo_epi64(a[4 * i + 1], a[4 * i + 3]);
    b[4 * i + 3] = _mm512_unpackhi_epi64(a[4 * i + 1], a[4 * i + 3]);
  }
  // Then a 4 x 4 transpose of 128-bit lanes for each p.
  for (int p = 0; p < 4; ++p) {
    const __m512i c0 = _mm512_shuffle_i32x4(b[p], b[4 + p], 0x88);
    const __m512i c1 = _mm512_shuffle_i32x4(b[p], b[4 + p], 0xdd);
    const __m512i c2 = _mm512_shuffle_i32x4(b[8 + p], b[12 + p], 0x88);
    const __m512i c3 = _mm512_shuffle_i32x4(b[8 + p], b[12 + p], 0xdd);
    out[p] = _mm512_shuffle_i32x4(c0, c2, 0x88);
    out[4 + p] = _mm512_shuffle_i32x4(c1, c3, 0x88);
    out[8 + p] = _mm512_shuffle_i32x4(c0, c2, 0xdd);
    out[12 + p] = _mm512_shuffle_i32x4(c1, c3, 0xdd);
  }
}

// Each column's 64 bytes at offset `at` of its block, transposed: lane c
// of out[v] is column c's dword v.
inline void load_transposed(const Columns& w, size_t at, __m512i (&out)[16]) {
  __m512i in[kKColumns];
  for (int c = 0; c < kKColumns; ++c) in[c] = _mm512_loadu_si512(w.block[c] + at);
  transpose16(in, out);
}

// Both words of each dword lane: lo's low word, hi's low word.
inline __m512i word_pairs(__m512i lo, __m512i hi) {
  return _mm512_mask_blend_epi16(0xaaaaaaaa, lo, _mm512_slli_epi32(hi, 16));
}

// Each column's dword at byte `at` of its block, column c in lane c.
inline __m512i gather(const Columns& w, size_t at) {
  return _mm512_i32gather_epi32(w.offset, w.base + at, 1);
}

// Lane c: the f16 in the low (high) word of lane c, as f32; F16C's
// conversion, as half_at's.
inline __m512 low_halves(__m512i v) {
  return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v));
}

inline __m512 high_halves(__m512i v) {
  return low_halves(_mm512_srli_epi32(v, 16));
}

// Byte i of each lane, unsigned or signed, as int32.
inline __m512i byte_u(__m512i v, int i) {
  return _mm512_and_si512(_mm512_srli_epi32(v, 8 * i), _mm512_set1_epi32(255));
}

inline __m512i byte_s(__m512i v, int i) {
  return _mm512_srai_epi32(_mm512_slli_epi32(v, 24 - 8 * i), 24);
}

// Q4_K and Q5_K: qs byte 32 i + 4 u + e (dword 8 i + u) holds element
// 64 i + 4 u + e in its low nibble (group of 4: 16 i + u) and element
// 64 i + 32 + 4 u + e in its high one (16 i + 8 + u); bit j of qh byte
// 4 u + e is bit 4 of element 32 j + 4 u + e (group 8 j + u).
void unpack_q4_q5_k(const Columns& w, bool five_bit, ColumnBlockK& out) {
  const size_t scales_at = offsetof(BlockQ4_K, scales);
  const size_t qs_at = five_bit ? offsetof(BlockQ5_K, qs) : offsetof(BlockQ4_K, qs);
  __m512i qs[2][16], qh[16];
  load_transposed(w, qs_at, qs[0]);
  load_transposed(w, qs_at + 64, qs[1]);
  if (five_bit) load_transposed(w, offsetof(BlockQ5_K, qh), qh);  // dwords 8-15 unused
  // k_scales_mins on 16 columns at once: bytes 0-3 of scales_mins[0] are
  // the scales of sub-blocks 0-3, of [1] 4-7; [2] and [3] hold the mins.
  const __m512i u0 = gather(w, scales_at), u1 = gather(w, scales_at + 4),
                u2 = gather(w, scales_at + 8);
  const __m512i low6 = _mm512_set1_epi32(0x3f3f3f3f), low4 = _mm512_set1_epi32(0x0f0f0f0f),
                top2 = _mm512_set1_epi32(0x30303030);
  const __m512i scales_mins[4] = {
      _mm512_and_si512(u0, low6),
      _mm512_or_si512(_mm512_and_si512(u2, low4),
                      _mm512_and_si512(_mm512_srli_epi32(u0, 2), top2)),
      _mm512_and_si512(u1, low6),
      _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(u2, 4), low4),
                      _mm512_and_si512(_mm512_srli_epi32(u1, 2), top2))};
  const __m512i nibble = _mm512_set1_epi8(15), one = _mm512_set1_epi8(1);
  for (int i = 0; i < 4; ++i) {
    for (int u = 0; u < 8; ++u) {
      const __m512i bytes = qs[i / 2][8 * (i % 2) + u];
      __m512i low = _mm512_and_si512(bytes, nibble);
      __m512i high = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), nibble);
      if (five_bit) {
        const __m512i bits_low = _mm512_and_si512(_mm512_srli_epi16(qh[u], 2 * i), one);
        const __m512i bits_high = _mm512_and_si512(_mm512_srli_epi16(qh[u], 2 * i + 1), one);
        low = _mm512_or_si512(low, _mm512_slli_epi16(bits_low, 4));
        high = _mm512_or_si512(high, _mm512_slli_epi16(bits_high, 4));
      }
      _mm512_store_si512(out.q[16 * i + u], low);
      _mm512_store_si512(out.q[16 * i + 8 + u], high);
    }
  }
  for (int j = 0; j < 8; ++j) {
    _mm512_store_si512(out.scale[j], byte_u(scales_mins[j / 4], j % 4));
    // Groups 2 j and 2 j + 1 share sub-block j's min.
    const __m512i min = byte_u(scales_mins[2 + j / 4], j % 4);
    _mm512_store_si512(out.min[j], word_pairs(min, min));
  }
  const __m512i d = gather(w, offsetof(BlockQ4_K, d));  // d, dmin
  _mm512_store_ps(out.d, low_halves(d));
  _mm512_store_ps(out.dmin, high_halves(d));
}

// Q6_K: element 128 h + 32 k + 4 u + e (group of 4: 32 h + 8 k + u) has
// its low 4 bits in ql byte 64 h + 32 (k % 2) + 4 u + e, low nibble for
// k < 2, and its high 2 in bits 2 k, 2 k + 1 of qh byte 32 h + 4 u + e.
void unpack_q6_k(const Columns& w, ColumnBlockK& out) {
  __m512i ql[2][16], qh[16];
  load_transposed(w, offsetof(BlockQ6_K, ql), ql[0]);
  load_transposed(w, offsetof(BlockQ6_K, ql) + 64, ql[1]);
  load_transposed(w, offsetof(BlockQ6_K, qh), qh);
  __m512i packed[4];
  for (int i = 0; i < 4; ++i) packed[i] = gather(w, offsetof(BlockQ6_K, scales) + 4 * i);
  __m512i scales[16];
  for (int g = 0; g < 16; ++g) scales[g] = byte_s(packed[g / 4], g % 4);
  const __m512i nibble = _mm512_set1_epi8(15), two_bits = _mm512_set1_epi8(3);
  for (int h = 0; h < 2; ++h) {
    for (int k = 0; k < 4; ++k) {
      for (int u = 0; u < 8; ++u) {
        const __m512i lows = ql[h][8 * (k % 2) + u];
        const __m512i low = _mm512_and_si512(k < 2 ? lows : _mm512_srli_epi16(lows, 4), nibble);
        const __m512i high =
            _mm512_and_si512(_mm512_srli_epi16(qh[8 * h + u], 2 * k), two_bits);
        _mm512_store_si512(out.q[32 * h + 8 * k + u],
                           _mm512_or_si512(low, _mm512_slli_epi16(high, 4)));
      }
    }
  }
  const __m512i zero = _mm512_setzero_si512();
  for (int g = 0; g < 16; ++g) _mm512_store_si512(out.scale[g], scales[g]);
  for (int p = 0; p < 8; ++p) {
    // -32 sc of groups 2 p and 2 p + 1: the offset of the quants, in A.
    const __m512i lo = _mm512_sub_epi32(zero, _mm512_slli_epi32(scales[2 * p], 5));
    const __m512i hi = _mm512_sub_epi32(zero, _mm512_slli_epi32(scales[2 * p + 1], 5));
    _mm512_store_si512(out.min[p], word_pairs(lo, hi));
  }
  // d in the high word of the dword that ends the block (scales 14, 15, d).
  _mm512_store_ps(out.d, high_halves(gather(w, offsetof(BlockQ6_K, d) - 2)));
  _mm512_store_ps(out.dmin, _mm512_setzero_ps());
}

// Columns [column0, column0 + columns) into blocks[0 .. k / 256); slots
// past `columns` repeat the last column, their lanes computed and dropped.
void unpack_columns(const QuantGemmArgs& a, int64_t column0, int columns, ColumnBlockK* blocks) {
  const int64_t block_bytes = ggml_type_info(a.type).block_bytes;
  alignas(64) int32_t slot_row[kKColumns];
  for (int c = 0; c < kKColumns; ++c)
    slot_row[c] = static_cast<int32_t>(std::min(c, columns - 1) * a.w_row_bytes);
  const __m512i offsets = _mm512_load_si512(slot_row);
  for (int64_t b = 0; b < a.k / kQKK; ++b) {
    Columns w;
    w.base = a.w + column0 * a.w_row_bytes + b * block_bytes;
    for (int c = 0; c < kKColumns; ++c) w.block[c] = w.base + slot_row[c];
    w.offset = offsets;
    if (a.type == GgmlType::q6_k) {
      unpack_q6_k(w, blocks[b]);
    } else {
      unpack_q4_q5_k(w, a.type == GgmlType::q5_k, blocks[b]);
    }
  }
}

// Activation dword at byte `at`, in every lane.
inline __m512i x_dword(const void* p) {
  int32_t v = 0;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// kRows rows of x against the 16 unpacked columns, each output in its own
// lane. kGroup: elements per scale (32 for Q4_K / Q5_K, 16 for Q6_K).
template <int kRows, bool kQ6>
void column_tile(const QuantGemmArgs& a, const ColumnBlockK* blocks, int64_t first, int64_t column0,
                 int columns) {
  constexpr int kGroup = kQ6 ? 16 : 32, kGroups = kQKK / kGroup, kQuads = kGroup / 4;
  const int64_t blocks_per_row = a.k / kQKK;
  const BlockQ8_K* x[kRows];
  for (int r = 0; r < kRows; ++r) x[r] = a.x_k + (first + r) * blocks_per_row;
  const __m512 sign = _mm512_set1_ps(-0.0f);
  __m512 acc[kRows];
  for (__m512& v : acc) v = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks_per_row; ++b) {
    const ColumnBlockK& w = blocks[b];
    __m512i sum_a[kRows];
    for (__m512i& v : sum_a) v = _mm512_setzero_si512();
    for (int g = 0; g < kGroups; ++g) {
      // S: each group's quants . activations, exact in int32.
      __m512i s[kRows];
      for (__m512i& v : s) v = _mm512_setzero_si512();
      for (int t = 0; t < kQuads; ++t) {
        const __m512i q = _mm512_load_si512(w.q[kQuads * g + t]);
        for (int r = 0; r < kRows; ++r)
          s[r] = _mm512_dpbusd_epi32(s[r], q, x_dword(x[r][b].qs + kGroup * g + 4 * t));
      }
      const __m512i scale = _mm512_load_si512(w.scale[g]);
      for (int r = 0; r < kRows; ++r) sum_a[r] = _mm512_add_epi32(sum_a[r], _mm512_mullo_epi32(s[r], scale));
    }
    // B (Q4_K, Q5_K), or Q6_K's -32 sc bsum terms of A: 8 word pairs.
    __m512i sum_b[kRows];
    for (int r = 0; r < kRows; ++r) sum_b[r] = kQ6 ? sum_a[r] : _mm512_setzero_si512();
    for (int p = 0; p < 8; ++p) {
      const __m512i min = _mm512_load_si512(w.min[p]);
      for (int r = 0; r < kRows; ++r)
        sum_b[r] = _mm512_dpwssd_epi32(sum_b[r], min, x_dword(x[r][b].bsums + 2 * p));
    }
    const __m512 d = _mm512_load_ps(w.d);
    for (int r = 0; r < kRows; ++r) {
      const __m512 x_d = _mm512_set1_ps(x[r][b].d);
      if (kQ6) {
        acc[r] = _mm512_fmadd_ps(_mm512_mul_ps(d, x_d), _mm512_cvtepi32_ps(sum_b[r]), acc[r]);
      } else {
        acc[r] = _mm512_fmadd_ps(_mm512_mul_ps(d, x_d), _mm512_cvtepi32_ps(sum_a[r]), acc[r]);
        const __m512 dmin = _mm512_xor_ps(_mm512_mul_ps(_mm512_load_ps(w.dmin), x_d), sign);
        acc[r] = _mm512_fmadd_ps(dmin, _mm512_cvtepi32_ps(sum_b[r]), acc[r]);
      }
    }
  }
  const __mmask16 keep = static_cast<__mmask16>((1u << columns) - 1);
  for (int r = 0; r < kRows; ++r)
    _mm512_mask_storeu_ps(a.out + (first + r) * a.n + column0, keep, acc[r]);
}

// Every row, kKRows at a time, the last tile its own row count.
template <bool kQ6>
void column_rows(const QuantGemmArgs& a, const ColumnBlockK* blocks, int64_t column0, int columns) {
  int64_t first = 0;
  for (; first + kKRows <= a.m; first += kKRows)
    column_tile<kKRows, kQ6>(a, blocks, first, column0, columns);
  const auto tail = [&]<int... kRows>(std::integer_sequence<int, kRows...>) {
    ((a.m - first == kRows + 1 ? column_tile<kRows + 1, kQ6>(a, blocks, first, column0, columns)
                               : void()),
     ...);
  };
  tail(std::make_integer_sequence<int, kKRows - 1>());
}

}  // namespace

void quant_gemm_k_columns_avx512_vnni(const QuantGemmArgs& args, int64_t column_begin,
                                      int64_t column_end, const QuantScratch& scratch) {
  for (int64_t j = column_begin; j < column_end; j += kKColumns) {
    const int columns = static_cast<int>(std::min<int64_t>(kKColumns, column_end - j));
    unpack_columns(args, j, columns, scratch.k_columns);
    if (args.type == GgmlType::q6_k) {
      column_rows<true>(args, scratch.k_columns, j, columns);
    } else {
      column_rows<false>(args, scratch.k_columns, j, columns);
    }
  }
}

}  // namespace hive
#endif  // __x86_64__
