// The AVX2 kernel for Q5_0 / Q5_1 weights (quant_gemm_q5.hpp): one ymm per
// block, whose 8 int32 lanes (vpmaddubsw of the unsigned quants 0..31 with
// the activations, then vpmaddwd by ones; no int16 sum passes 2 x 31 x 127)
// are the block's 8 groups of 4: even blocks accumulate in one register,
// odd ones in another, the order's lanes 0-7 and 8-15. Built with its own
// -m flags and called only on the avx2 path without VNNI.
#include <cstring>
#include <type_traits>

#include "kernels/cpu/intrinsics.hpp"
#include "kernels/quant/dequantize.hpp"
#include "kernels/quant/quant_gemm_q5.hpp"

namespace hive {

namespace {

// Weight row into pairs, as unpack_q5_row: the fifth bits from qh spread
// over the 32 bytes with a shuffle and a bit test.
template <class Block>
void unpack_row(const char* row, int64_t blocks, Q5Pair* pairs) {
  const __m128i low_bits = _mm_set1_epi8(15);
  // Byte i takes qh byte i / 8 and tests its bit i % 8.
  const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                          2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bit = _mm256_set1_epi64x(0x8040201008040201);
  for (int64_t b = 0; b < blocks; ++b) {
    Block block;
    std::memcpy(&block, row + b * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
    Q5Pair& pair = pairs[b / 2];
    const int h = static_cast<int>(b % 2);
    const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block.qs));
    const __m256i nibbles = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(qs, 4), low_bits),
                                             _mm_and_si128(qs, low_bits));
    uint32_t qh = 0;
    std::memcpy(&qh, block.qh, 4);
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)), spread);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
    const __m256i q = _mm256_or_si256(nibbles, _mm256_and_si256(set, _mm256_set1_epi8(16)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(pair.q + 32 * h), q);
    _mm256_store_ps(pair.d + 8 * h, _mm256_set1_ps(half_bits_to_f32(block.d)));
    float m = 0;
    if constexpr (std::is_same_v<Block, BlockQ5_1>) m = half_bits_to_f32(block.m);
    _mm256_store_ps(pair.m + 8 * h, _mm256_set1_ps(m));
  }
}

// Lanes l + 8 (the odd blocks) onto l, then + 4, + 2, + 1.
float fold(__m256 even, __m256 odd) {
  const __m256 eight = _mm256_add_ps(even, odd);
  const __m128 four = _mm_add_ps(_mm256_castps256_ps128(eight), _mm256_extractf128_ps(eight, 1));
  const __m128 two = _mm_add_ps(four, _mm_movehl_ps(four, four));
  return _mm_cvtss_f32(_mm_add_ss(two, _mm_shuffle_ps(two, two, 1)));
}

// Block b's 8 groups added to acc (its half h of the pair).
template <bool kMin>
__m256 add_block(__m256 acc, const Q5Pair& pair, int h, const int8_t* x, const float* x_d,
                 const int32_t* sums) {
  const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(pair.q + 32 * h));
  const __m256i pairs16 =
      _mm256_maddubs_epi16(q, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
  const __m256i products = _mm256_madd_epi16(pairs16, _mm256_set1_epi16(1));
  const __m256i group_sums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sums));
  const __m256 dx = _mm256_loadu_ps(x_d);
  const __m256 d = _mm256_mul_ps(_mm256_load_ps(pair.d + 8 * h), dx);
  if constexpr (kMin) {
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(products), d, acc);
    const __m256 m = _mm256_mul_ps(_mm256_load_ps(pair.m + 8 * h), dx);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(group_sums), m, acc);
  }
  const __m256i offset = _mm256_sub_epi32(products, _mm256_slli_epi32(group_sums, 4));
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(offset), d, acc);
}

template <bool kMin>
void columns(const Q5GemmArgs& a, int64_t column_begin, int64_t column_end, Q5Pair* pairs) {
  for (int64_t j = column_begin; j < column_end; ++j) {
    const char* row = a.w + j * a.w_row_bytes;
    if constexpr (kMin) {
      unpack_row<BlockQ5_1>(row, a.blocks, pairs);
    } else {
      unpack_row<BlockQ5_0>(row, a.blocks, pairs);
    }
    for (int64_t i = 0; i < a.m; ++i) {
      const int8_t* x = a.x_qs + i * 32 * a.x_blocks;
      const float* x_d = a.x_d + i * 8 * a.x_blocks;
      const int32_t* sums = a.x_sums + i * 8 * a.x_blocks;
      __m256 even = _mm256_setzero_ps(), odd = _mm256_setzero_ps();
      for (int64_t b = 0; b + 1 < a.blocks; b += 2) {
        const Q5Pair& pair = pairs[b / 2];
        even = add_block<kMin>(even, pair, 0, x + 32 * b, x_d + 8 * b, sums + 8 * b);
        odd = add_block<kMin>(odd, pair, 1, x + 32 * b + 32, x_d + 8 * b + 8, sums + 8 * b + 8);
      }
      if (a.blocks % 2 != 0) {
        const int64_t b = a.blocks - 1;
        even = add_block<kMin>(even, pairs[b / 2], 0, x + 32 * b, x_d + 8 * b, sums + 8 * b);
      }
      a.out[i * a.n + j] = fold(even, odd);
    }
  }
}

}  // namespace

void quant_gemm_q5_avx2(const Q5GemmArgs& args, int64_t column_begin, int64_t column_end,
                        Q5Pair* pairs) {
  if (args.type == GgmlType::q5_1) return columns<true>(args, column_begin, column_end, pairs);
  columns<false>(args, column_begin, column_end, pairs);
}

}  // namespace hive
