// The quantized matmul on AVX2 (vpmaddubsw, vpmaddwd), in the order of
// quant_matmul.hpp: what quant_gemm_avx512_vnni.cpp does, 32 bytes at a time
// and without VNNI's fused int8 dot products. vpmaddubsw saturates its int16
// pairs, so each product is arranged to fit: |w| (<= 128) times sign(w) * x
// (|x| <= 127) for Q8_0 / Q4_0, and quants <= 63 times x for the K-quants.
#if defined(__x86_64__)
#include "kernels/cpu/intrinsics.hpp"
#include "kernels/quant/quant_gemm_kernels.hpp"
#include "kernels/quant/quant_unpack.hpp"

namespace hive {
namespace {

// l + 8 onto l (even blocks' lanes plus odd blocks'), then + 4, + 2, + 1.
inline float fold(__m256 even, __m256 odd) {
  const __m256 s8 = _mm256_add_ps(even, odd);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

// m = 1, Q8_0 / Q4_0: a column's blocks straight into registers, the even
// blocks' lanes in one and the odd ones' in another (no padding block: it
// only adds zeros).
void pair_column(const QuantGemmArgs& a, int64_t column, const char* row) {
  const bool four_bit = a.type == GgmlType::q4_0;
  const int64_t blocks = a.k / kQK, block_bytes = four_bit ? 18 : 34;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t b = 0; b < blocks; ++b) {
    const char* block = row + b * block_bytes;
    const __m256i w = block_quants(block, four_bit);
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.x_qs + b * 32));
    const __m256i pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
    const __m256i sums = _mm256_madd_epi16(pairs, ones);
    const __m256 d = _mm256_mul_ps(_mm256_set1_ps(half_at(block)), _mm256_broadcast_ss(a.x_d + b));
    acc[b % 2] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), d, acc[b % 2]);
  }
  a.out[column] = fold(acc[0], acc[1]);
}

// Q8_0 / Q4_0: row i's lanes 0-7 (even blocks) at acc[16 i], 8-15 (odd) after.
void pair_columns(const QuantGemmArgs& a, int64_t column, const QuantScratch& s) {
  const int64_t blocks = a.x_blocks;
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t i = 0; i < 2 * a.m; ++i) _mm256_storeu_ps(s.acc + 8 * i, _mm256_setzero_ps());
  for (int64_t b = 0; b < blocks; ++b) {
    const PairQ8_0& pair = s.pairs[b / 2];
    const int half = static_cast<int>(b % 2);
    const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(pair.w + 32 * half));
    const __m256i abs_w =
        _mm256_load_si256(reinterpret_cast<const __m256i*>(pair.abs_w + 32 * half));
    const __m256 w_d = _mm256_load_ps(pair.d + 8 * half);
    for (int64_t i = 0; i < a.m; ++i) {
      const __m256i x =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.x_qs + (i * blocks + b) * 32));
      const __m256i pairs = _mm256_maddubs_epi16(abs_w, _mm256_sign_epi8(x, w));
      const __m256i sums = _mm256_madd_epi16(pairs, ones);
      const __m256 d = _mm256_mul_ps(w_d, _mm256_broadcast_ss(a.x_d + i * blocks + b));
      float* acc = s.acc + 16 * i + 8 * half;
      _mm256_storeu_ps(acc, _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), d, _mm256_loadu_ps(acc)));
    }
  }
  for (int64_t i = 0; i < a.m; ++i)
    a.out[i * a.n + column] =
        fold(_mm256_loadu_ps(s.acc + 16 * i), _mm256_loadu_ps(s.acc + 16 * i + 8));
}

inline int32_t sum_lanes(__m256i v) {
  const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i s2 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
  return _mm_cvtsi128_si32(s2) + _mm_extract_epi32(s2, 1);
}

void k_columns(const QuantGemmArgs& a, int64_t column, const QuantScratch& s) {
  const int64_t blocks = a.k / kQKK;
  const bool offset_in_a = a.type == GgmlType::q6_k;
  for (int64_t i = 0; i < a.m; ++i) s.acc[i] = 0.0f;
  for (int64_t b = 0; b < blocks; ++b) {
    const UnpackedK& u = s.blocks[b];
    const __m256i min = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.min));
    for (int64_t i = 0; i < a.m; ++i) {
      const BlockQ8_K& x = a.x_k[i * blocks + b];
      __m256i p = _mm256_setzero_si256();
      for (int c = 0; c < 8; ++c) {
        const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.q + 32 * c));
        const __m256i scale =
            _mm256_load_si256(reinterpret_cast<const __m256i*>(u.pair_scale + 16 * c));
        const __m256i xc = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + 32 * c));
        p = _mm256_add_epi32(p, _mm256_madd_epi16(_mm256_maddubs_epi16(q, xc), scale));
      }
      const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bsums));
      const int32_t sum_p = sum_lanes(p), sum_m = sum_lanes(_mm256_madd_epi16(bsums, min));
      float& acc = s.acc[i];
      if (offset_in_a) {
        acc = __builtin_fmaf(u.d * x.d, static_cast<float>(sum_p - sum_m), acc);
      } else {
        acc = __builtin_fmaf(u.d * x.d, static_cast<float>(sum_p), acc);
        acc = __builtin_fmaf(-(u.dmin * x.d), static_cast<float>(sum_m), acc);
      }
    }
  }
  for (int64_t i = 0; i < a.m; ++i) a.out[i * a.n + column] = s.acc[i];
}

}  // namespace

void quant_gemm_columns_avx2(const QuantGemmArgs& args, int64_t column_begin, int64_t column_end,
                             const QuantScratch& scratch) {
  const bool k_quant = is_k_quant(args.type);
  for (int64_t j = column_begin; j < column_end; ++j) {
    if (args.m == 1 && !k_quant) {
      pair_column(args, j, args.w + j * args.w_row_bytes);
      continue;
    }
    unpack_row(args, args.w + j * args.w_row_bytes, scratch);
    if (k_quant) {
      k_columns(args, j, scratch);
    } else {
      pair_columns(args, j, scratch);
    }
  }
}

}  // namespace hive
#endif  // __x86_64__
