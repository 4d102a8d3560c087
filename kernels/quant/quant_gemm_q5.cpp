// The AVX-512 VNNI kernel for Q5_0 / Q5_1 weights (quant_gemm_q5.hpp): one
// zmm per block pair, whose 16 int32 lanes from vpdpbusd are the order's 16
// groups of 4. Built with its own -m flags and called only where the CPU has
// VNNI; it holds no inline code shared with other files (gemm_kernels.hpp).
#include <cstring>
#include <type_traits>

#include "kernels/cpu/avx512_fold.hpp"
#include "kernels/cpu/intrinsics.hpp"
#include "kernels/quant/dequantize.hpp"
#include "kernels/quant/quant_gemm_q5.hpp"

namespace hive {

namespace {

// unpack_q5_row's layout with vector ops: the nibbles of qs and, where bit i
// of qh is set, 16 added to quant i.
template <class Block>
void unpack_row(const char* row, int64_t blocks, Q5Pair* pairs) {
  const __m128i low_bits = _mm_set1_epi8(15);
  const __m256i fifth_bit = _mm256_set1_epi8(16);
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
    const __m256i q = _mm256_or_si256(nibbles, _mm256_maskz_mov_epi8(qh, fifth_bit));
    _mm256_store_si256(reinterpret_cast<__m256i*>(pair.q + 32 * h), q);
    _mm256_store_ps(pair.d + 8 * h, _mm256_set1_ps(half_bits_to_f32(block.d)));
    float m = 0;
    if constexpr (std::is_same_v<Block, BlockQ5_1>) m = half_bits_to_f32(block.m);
    _mm256_store_ps(pair.m + 8 * h, _mm256_set1_ps(m));
  }
  if (blocks % 2 != 0) {  // the last pair's second block: zero
    Q5Pair& pair = pairs[blocks / 2];
    _mm256_store_si256(reinterpret_cast<__m256i*>(pair.q + 32), _mm256_setzero_si256());
    _mm256_store_ps(pair.d + 8, _mm256_setzero_ps());
    _mm256_store_ps(pair.m + 8, _mm256_setzero_ps());
  }
}

// One block pair's products added to acc, in the lanes of `mask`.
template <bool kMin>
__m512 add_pair(__m512 acc, const Q5Pair& pair, const int8_t* x, const float* x_d,
                const int32_t* sums, __mmask16 mask) {
  const __m512i q = _mm512_load_si512(pair.q);
  const __m512i products = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q, _mm512_loadu_si512(x));
  const __m512i group_sums = _mm512_loadu_si512(sums);
  const __m512 dx = _mm512_loadu_ps(x_d);
  const __m512 d = _mm512_mul_ps(_mm512_load_ps(pair.d), dx);
  if constexpr (kMin) {
    acc = _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(products), d, acc, mask);
    const __m512 m = _mm512_mul_ps(_mm512_load_ps(pair.m), dx);
    return _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(group_sums), m, acc, mask);
  }
  const __m512i offset = _mm512_sub_epi32(products, _mm512_slli_epi32(group_sums, 4));
  return _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(offset), d, acc, mask);
}

template <bool kMin>
void columns(const Q5GemmArgs& a, int64_t column_begin, int64_t column_end, Q5Pair* pairs) {
  const int64_t full_pairs = a.blocks / 2;
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
      __m512 acc = _mm512_setzero_ps();
      for (int64_t c = 0; c < full_pairs; ++c)
        acc = add_pair<kMin>(acc, pairs[c], x + 64 * c, x_d + 16 * c, sums + 16 * c, 0xffff);
      if (a.blocks % 2 != 0) {  // the last block alone: its pair's first 8 lanes
        const int64_t c = full_pairs;
        acc = add_pair<kMin>(acc, pairs[c], x + 64 * c, x_d + 16 * c, sums + 16 * c, 0x00ff);
      }
      a.out[i * a.n + j] = cpu::fold(acc);  // l + 8 onto l, + 4, + 2, + 1
    }
  }
}

}  // namespace

void quant_gemm_q5_avx512_vnni(const Q5GemmArgs& args, int64_t column_begin, int64_t column_end,
                               Q5Pair* pairs) {
  if (args.type == GgmlType::q5_1) return columns<true>(args, column_begin, column_end, pairs);
  columns<false>(args, column_begin, column_end, pairs);
}

}  // namespace hive
