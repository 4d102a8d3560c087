// The quantized matmul on AVX-512 with VNNI (vpdpbusd, vpdpwssd), in the
// order of quant_matmul.hpp. Per row and block it moves 34 (Q8_0) to 292
// (Q8_K) activation bytes from L1/L2; the weights, 18 to 210 bytes per block,
// come from memory once per task, so at m = 1 the roofline is the read
// bandwidth over the weight bytes, and from a few rows on the int8
// multiply-adds (64 per vpdpbusd).
#if defined(__x86_64__)
#include <cstddef>
#include <cstring>

#include "kernels/cpu/avx512_fold.hpp"
#include "kernels/cpu/intrinsics.hpp"
#include "kernels/quant/quant_gemm_kernels.hpp"
#include "kernels/quant/quant_unpack.hpp"

namespace hive {
namespace {

// A Q8_0 or Q4_0 block's 32 signed quants (the Q4_0 nibbles less 8).
inline __m256i block_quants(const char* block, bool four_bit) {
  if (!four_bit) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 2));
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
  const __m128i low = _mm_and_si128(bytes, _mm_set1_epi8(15));
  const __m128i high = _mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(15));
  return _mm256_sub_epi8(_mm256_set_m128i(high, low), _mm256_set1_epi8(8));
}

inline float block_scale(const char* block) {
  uint16_t bits = 0;
  std::memcpy(&bits, block, 2);
  return half_bits_to_f32(bits);
}

// A pair of Q8_0 or Q4_0 blocks (2c, 2c + 1; zero past the row) in
// registers: quant_unpack.hpp's PairQ8_0 less the |w| only AVX2 reads. Made
// where it is used, per column and pair: a row unpacked into scratch first
// was stored and read back, and its scalar loops, not memory, bounded Q8_0
// and Q4_0 at m = 1.
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
  const float d1 = second ? block_scale(first + block_bytes) : 0.0f;
  p.d = _mm512_insertf32x8(_mm512_set1_ps(block_scale(first)), _mm256_set1_ps(d1), 1);
  return p;
}

// Q8_0 / Q4_0: the 16 lanes of row i are one zmm, lanes 0-7 for even blocks
// and 8-15 for odd ones: a pair of blocks is one 64-byte load of x.
inline __m512 pair_step(const QuantGemmArgs& a, const PairRegisters& w, int64_t i, int64_t c,
                        __m512 acc) {
  const int64_t pairs = a.x_blocks / 2;
  const __m512i flip = _mm512_set1_epi8(-128);
  const __m512i halves = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  // (x + 128) . w - 128 sum(w): vpdpbusd wants its first factor unsigned.
  const __m512i x = _mm512_xor_si512(_mm512_loadu_si512(a.x_qs + (i * pairs + c) * 64), flip);
  const __m512i sums = _mm512_dpbusd_epi32(w.offset, x, w.w);
  const __m128d x_d2 = _mm_load_sd(reinterpret_cast<const double*>(a.x_d + (i * pairs + c) * 2));
  const __m512 x_d = _mm512_permutexvar_ps(halves, _mm512_castps128_ps512(_mm_castpd_ps(x_d2)));
  const __m512 d = _mm512_mul_ps(w.d, x_d);
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), d, acc);
}

void pair_columns(const QuantGemmArgs& a, int64_t column, const char* row, const QuantScratch& s) {
  const int64_t pairs = a.x_blocks / 2;
  if (a.m == 1) {  // decode: the accumulator stays in a register
    __m512 acc = _mm512_setzero_ps();
    for (int64_t c = 0; c < pairs; ++c) acc = pair_step(a, load_pair(a, row, c), 0, c, acc);
    a.out[column] = cpu::fold(acc);
    return;
  }
  for (int64_t i = 0; i < a.m; ++i) _mm512_storeu_ps(s.acc + 16 * i, _mm512_setzero_ps());
  for (int64_t c = 0; c < pairs; ++c) {
    const PairRegisters w = load_pair(a, row, c);
    for (int64_t i = 0; i < a.m; ++i)
      _mm512_storeu_ps(s.acc + 16 * i, pair_step(a, w, i, c, _mm512_loadu_ps(s.acc + 16 * i)));
  }
  for (int64_t i = 0; i < a.m; ++i)
    a.out[i * a.n + column] = cpu::fold(_mm512_loadu_ps(s.acc + 16 * i));
}

// One K block against one row's Q8_K block: the exact sums P = sum of
// pair_scale * (q . x) and M = sum of min * bsums.
struct KSums {
  int32_t p, m;
};

inline KSums k_sums(const __m512i (&q)[4], const __m512i (&scale)[4], const __m256i min,
                    const BlockQ8_K& x) {
  __m512i p = _mm512_setzero_si512();
  for (int c = 0; c < 4; ++c) {
    const __m512i pairs = _mm512_maddubs_epi16(q[c], _mm512_loadu_si512(x.qs + 64 * c));
    p = _mm512_dpwssd_epi32(p, pairs, scale[c]);
  }
  const __m256i m =
      _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bsums)), min);
  const __m128i m4 = _mm_add_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
  const __m128i m2 = _mm_add_epi32(m4, _mm_unpackhi_epi64(m4, m4));
  return {_mm512_reduce_add_epi32(p), _mm_cvtsi128_si32(m2) + _mm_extract_epi32(m2, 1)};
}

// A K block as k_sums reads it: quants in element order (64 per register),
// each pair's scale, each group of 16's min (or 32 * scale for Q6_K).
struct KRegisters {
  __m512i q[4], scale[4];
  __m256i min;
  float d, dmin;
};

// Q4_K and Q6_K straight from the row into registers, the same integers
// quant_unpack.hpp's loops store (those stay for Q5_K): their stores and
// loads, not memory, bounded Q4_K at m = 1 below the bf16 matmul.
inline KRegisters load_q4_k(const char* row, int64_t b) {
  BlockQ4_K block;
  std::memcpy(&block, row + b * static_cast<int64_t>(sizeof(BlockQ4_K)), sizeof(BlockQ4_K));
  KRegisters r;
  alignas(32) int16_t mins[16];
  int scales[8];
  for (int j = 0; j < 8; ++j) {
    int min = 0;
    k_scale_min(block.scales, j, scales[j], min);
    mins[2 * j] = mins[2 * j + 1] = static_cast<int16_t>(min);
  }
  const __m256i nibble = _mm256_set1_epi8(15);
  for (int c = 0; c < 4; ++c) {
    // Bytes 32c..32c+31: sub-block 2c in the low nibbles, 2c + 1 in the high.
    const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qs + 32 * c));
    const __m256i low = _mm256_and_si256(bytes, nibble);
    const __m256i high = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), nibble);
    r.q[c] = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
    r.scale[c] = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_set1_epi16(static_cast<int16_t>(scales[2 * c]))),
        _mm256_set1_epi16(static_cast<int16_t>(scales[2 * c + 1])), 1);
  }
  r.min = _mm256_load_si256(reinterpret_cast<const __m256i*>(mins));
  r.d = half_bits_to_f32(block.d);
  r.dmin = half_bits_to_f32(block.dmin);
  return r;
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
  uint16_t d = 0;
  std::memcpy(&d, block + offsetof(BlockQ6_K, d), 2);
  r.d = half_bits_to_f32(d);
  r.dmin = 0;
  return r;
}

inline KRegisters load_unpacked(const UnpackedK& u) {
  KRegisters r;
  for (int c = 0; c < 4; ++c) {
    r.q[c] = _mm512_load_si512(u.q + 64 * c);
    r.scale[c] = _mm512_load_si512(u.pair_scale + 32 * c);
  }
  r.min = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.min));
  r.d = u.d;
  r.dmin = u.dmin;
  return r;
}

void k_columns(const QuantGemmArgs& a, int64_t column, const char* row, const QuantScratch& s) {
  const int64_t blocks = a.k / kQKK;
  const bool offset_in_a = a.type == GgmlType::q6_k;
  if (a.type == GgmlType::q5_k) unpack_row(a, row, s);
  for (int64_t i = 0; i < a.m; ++i) s.acc[i] = 0.0f;
  for (int64_t b = 0; b < blocks; ++b) {
    const KRegisters u = a.type == GgmlType::q4_k   ? load_q4_k(row, b)
                         : a.type == GgmlType::q6_k ? load_q6_k(row, b)
                                                    : load_unpacked(s.blocks[b]);
    for (int64_t i = 0; i < a.m; ++i) {
      const BlockQ8_K& x = a.x_k[i * blocks + b];
      const KSums sums = k_sums(u.q, u.scale, u.min, x);
      float& acc = s.acc[i];
      if (offset_in_a) {
        acc = __builtin_fmaf(u.d * x.d, static_cast<float>(sums.p - sums.m), acc);
      } else {
        acc = __builtin_fmaf(u.d * x.d, static_cast<float>(sums.p), acc);
        acc = __builtin_fmaf(-(u.dmin * x.d), static_cast<float>(sums.m), acc);
      }
    }
  }
  for (int64_t i = 0; i < a.m; ++i) a.out[i * a.n + column] = s.acc[i];
}

}  // namespace

void quant_gemm_columns_avx512_vnni(const QuantGemmArgs& args, int64_t column_begin,
                                    int64_t column_end, const QuantScratch& scratch) {
  const bool k_quant = is_k_quant(args.type);
  for (int64_t j = column_begin; j < column_end; ++j) {
    const char* row = args.w + j * args.w_row_bytes;
    if (k_quant) {
      k_columns(args, j, row, scratch);
    } else {
      pair_columns(args, j, row, scratch);
    }
  }
}

}  // namespace hive
#endif  // __x86_64__
