// The quantized matmul on AVX-512 with VNNI (vpdpbusd, vpdpwssd), in the
// order of quant_matmul.hpp. Per row and block it moves 34 (Q8_0) to 292
// (Q8_K) activation bytes from L1/L2; the weights, 18 to 210 bytes per block,
// come from memory once per task, so at m = 1 the roofline is the read
// bandwidth over the weight bytes, and from a few rows on the int8
// multiply-adds (64 per vpdpbusd).
#if defined(__x86_64__)
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

// quant_unpack.hpp's unpack_pairs in registers, less the |w| only AVX2
// reads: its scalar loops, not memory, bounded Q8_0 and Q4_0 at m = 1.
void unpack_pairs_vnni(const QuantGemmArgs& a, const char* row, PairQ8_0* pairs) {
  const bool four_bit = a.type == GgmlType::q4_0;
  const int64_t blocks = a.k / kQK, block_bytes = four_bit ? 18 : 34;
  const __m512i zero = _mm512_setzero_si512();
  for (int64_t c = 0; c < (blocks + 1) / 2; ++c) {
    const char* first = row + 2 * c * block_bytes;
    const bool second = 2 * c + 1 < blocks;
    const __m256i w0 = block_quants(first, four_bit);
    const __m256i w1 =
        second ? block_quants(first + block_bytes, four_bit) : _mm256_setzero_si256();
    const __m512i w = _mm512_inserti64x4(_mm512_castsi256_si512(w0), w1, 1);
    // -128 * the sum of each group of 4: 1 * w summed by vpdpbusd.
    const __m512i sums = _mm512_dpbusd_epi32(zero, _mm512_set1_epi8(1), w);
    const float d1 = second ? block_scale(first + block_bytes) : 0.0f;
    _mm512_store_si512(pairs[c].w, w);
    _mm512_store_si512(pairs[c].offset, _mm512_sub_epi32(zero, _mm512_slli_epi32(sums, 7)));
    _mm512_store_ps(pairs[c].d,
                    _mm512_insertf32x8(_mm512_set1_ps(block_scale(first)), _mm256_set1_ps(d1), 1));
  }
}

// Q8_0 / Q4_0: the 16 lanes of row i are one zmm, lanes 0-7 for even blocks
// and 8-15 for odd ones: a pair of blocks is one 64-byte load of x.
void pair_columns(const QuantGemmArgs& a, int64_t column, const QuantScratch& s) {
  const int64_t pairs = a.x_blocks / 2;
  const __m512i flip = _mm512_set1_epi8(-128);
  const __m512i halves = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  for (int64_t i = 0; i < a.m; ++i) _mm512_storeu_ps(s.acc + 16 * i, _mm512_setzero_ps());
  for (int64_t c = 0; c < pairs; ++c) {
    const PairQ8_0& pair = s.pairs[c];
    const __m512i w = _mm512_load_si512(pair.w);
    const __m512i offset = _mm512_load_si512(pair.offset);
    const __m512 w_d = _mm512_load_ps(pair.d);
    for (int64_t i = 0; i < a.m; ++i) {
      // (x + 128) . w - 128 sum(w): vpdpbusd wants its first factor unsigned.
      const __m512i x = _mm512_xor_si512(_mm512_loadu_si512(a.x_qs + (i * pairs + c) * 64), flip);
      const __m512i sums = _mm512_dpbusd_epi32(offset, x, w);
      const __m128d x_d2 =
          _mm_load_sd(reinterpret_cast<const double*>(a.x_d + (i * pairs + c) * 2));
      const __m512 x_d = _mm512_permutexvar_ps(halves, _mm512_castps128_ps512(_mm_castpd_ps(x_d2)));
      const __m512 d = _mm512_mul_ps(w_d, x_d);
      float* acc = s.acc + 16 * i;
      _mm512_storeu_ps(acc, _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), d, _mm512_loadu_ps(acc)));
    }
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

void k_columns(const QuantGemmArgs& a, int64_t column, const QuantScratch& s) {
  const int64_t blocks = a.k / kQKK;
  const bool offset_in_a = a.type == GgmlType::q6_k;
  for (int64_t i = 0; i < a.m; ++i) s.acc[i] = 0.0f;
  for (int64_t b = 0; b < blocks; ++b) {
    const UnpackedK& u = s.blocks[b];
    __m512i q[4], scale[4];
    for (int c = 0; c < 4; ++c) {
      q[c] = _mm512_load_si512(u.q + 64 * c);
      scale[c] = _mm512_load_si512(u.pair_scale + 32 * c);
    }
    const __m256i min = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.min));
    for (int64_t i = 0; i < a.m; ++i) {
      const BlockQ8_K& x = a.x_k[i * blocks + b];
      const KSums sums = k_sums(q, scale, min, x);
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
      unpack_row(args, row, scratch);
      k_columns(args, j, scratch);
    } else {
      unpack_pairs_vnni(args, row, scratch.pairs);
      pair_columns(args, j, scratch);
    }
  }
}

}  // namespace hive
#endif  // __x86_64__
