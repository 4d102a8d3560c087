// The AVX2 kernel for Q5_0 / Q5_1 weights (quant_gemm_q5.hpp): one ymm per
// block, whose 8 int32 lanes (vpmaddubsw of the unsigned quants 0..31 with
// the activations, then vpmaddwd by ones; no int16 sum passes 2 x 31 x 127)
// are the block's 8 groups of 4. Built with its own -m flags and called
// only on the avx2 path without VNNI.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/intrinsics.hpp"
#include "kernels/quant/dequantize.hpp"
#include "kernels/quant/quant_block_sums.hpp"
#include "kernels/quant/quant_gemm_q5.hpp"

namespace hive {

namespace {

// Weight row into out, as unpack_q5_row: the fifth bits from qh spread
// over the 32 bytes with a shuffle and a bit test.
template <class Block>
void unpack_row(const char* row, int64_t blocks, const Q5Row& out) {
  const __m128i low_bits = _mm_set1_epi8(15);
  // Byte i takes qh byte i / 8 and tests its bit i % 8.
  const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                          2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bit = _mm256_set1_epi64x(0x8040201008040201);
  for (int64_t b = 0; b < blocks; ++b) {
    Block block;
    std::memcpy(&block, row + b * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
    const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block.qs));
    const __m256i nibbles = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(qs, 4), low_bits),
                                             _mm_and_si128(qs, low_bits));
    uint32_t qh = 0;
    std::memcpy(&qh, block.qh, 4);
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)), spread);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
    const __m256i q = _mm256_or_si256(nibbles, _mm256_and_si256(set, _mm256_set1_epi8(16)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.q + 32 * b), q);
    out.d[b] = half_bits_to_f32(block.d);
    out.m[b] = 0;
    if constexpr (std::is_same_v<Block, BlockQ5_1>) out.m[b] = half_bits_to_f32(block.m);
  }
}

// A block's 8 sums of 4 products q x (q unsigned, x signed).
inline __m256i block_products(const uint8_t* q, const int8_t* x) {
  const __m256i pairs =
      _mm256_maddubs_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q)),
                           _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

// One row's output against the unpacked column: per 8 blocks their exact
// sums (Q5_0 less 16 * the activation sums) through block_totals, then the
// blocks' fmas in turn; the blocks past the last 8 one at a time.
template <bool kMin>
float row_sum(const Q5GemmArgs& a, const Q5Row& w, const int8_t* x, const float* x_d,
              const int32_t* x_sums) {
  float s = 0;
  int64_t b = 0;
  for (; b + 8 <= a.blocks; b += 8) {
    __m256i products[8];
    for (int t = 0; t < 8; ++t) products[t] = block_products(w.q + 32 * (b + t), x + 32 * (b + t));
    const __m256i totals = block_totals(products);
    const __m256i block_x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x_sums + b));
    const __m256 dx = _mm256_loadu_ps(x_d + b);
    const __m256 d = _mm256_mul_ps(_mm256_loadu_ps(w.d + b), dx);
    if constexpr (kMin) {
      const __m256 m = _mm256_mul_ps(_mm256_loadu_ps(w.m + b), dx);
      s = fma_in_order(_mm256_cvtepi32_ps(totals), d, _mm256_cvtepi32_ps(block_x), m, s);
    } else {
      const __m256i exact = _mm256_sub_epi32(totals, _mm256_slli_epi32(block_x, 4));
      s = fma_in_order(_mm256_cvtepi32_ps(exact), d, s);
    }
  }
  for (; b < a.blocks; ++b) {
    const int32_t total = lane_total(block_products(w.q + 32 * b, x + 32 * b));
    if constexpr (kMin) {
      s = std::fma(static_cast<float>(total), w.d[b] * x_d[b], s);
      s = std::fma(static_cast<float>(x_sums[b]), w.m[b] * x_d[b], s);
    } else {
      s = std::fma(static_cast<float>(total - 16 * x_sums[b]), w.d[b] * x_d[b], s);
    }
  }
  return s;
}

// From 2 rows on: up to 8 rows at once, lane r of each block's tree row
// first + r's exact sum, each lane's fmas those of its row.
template <bool kMin>
void rows_sum(const Q5GemmArgs& a, const Q5Row& w, int64_t column, int64_t first, int rows) {
  const int8_t* x = a.x_qs + first * 32 * a.blocks;
  const float* x_d = a.x_d + first * a.blocks;
  const int32_t* x_sums = a.x_sums + first * a.blocks;
  __m256 s = _mm256_setzero_ps();
  for (int64_t b = 0; b < a.blocks; ++b) {
    __m256i products[8];
    alignas(32) float dx[8] = {};
    alignas(32) int32_t block_x[8] = {};
    for (int r = 0; r < 8; ++r) {
      products[r] = _mm256_setzero_si256();  // zero sums for the rows the tile lacks
      if (r >= rows) continue;
      products[r] = block_products(w.q + 32 * b, x + (r * a.blocks + b) * 32);
      dx[r] = x_d[r * a.blocks + b];
      block_x[r] = x_sums[r * a.blocks + b];
    }
    const __m256i totals = block_totals(products);
    const __m256i sums_x = _mm256_load_si256(reinterpret_cast<const __m256i*>(block_x));
    const __m256 xd = _mm256_load_ps(dx);
    const __m256 d = _mm256_mul_ps(_mm256_set1_ps(w.d[b]), xd);
    if constexpr (kMin) {
      s = _mm256_fmadd_ps(_mm256_cvtepi32_ps(totals), d, s);
      const __m256 m = _mm256_mul_ps(_mm256_set1_ps(w.m[b]), xd);
      s = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums_x), m, s);
    } else {
      const __m256i exact = _mm256_sub_epi32(totals, _mm256_slli_epi32(sums_x, 4));
      s = _mm256_fmadd_ps(_mm256_cvtepi32_ps(exact), d, s);
    }
  }
  alignas(32) float out[8];
  _mm256_store_ps(out, s);
  for (int r = 0; r < rows; ++r) a.out[(first + r) * a.n + column] = out[r];
}

template <bool kMin>
void columns(const Q5GemmArgs& a, int64_t column_begin, int64_t column_end, const Q5Row& w) {
  for (int64_t j = column_begin; j < column_end; ++j) {
    const char* row = a.w + j * a.w_row_bytes;
    if constexpr (kMin) {
      unpack_row<BlockQ5_1>(row, a.blocks, w);
    } else {
      unpack_row<BlockQ5_0>(row, a.blocks, w);
    }
    if (a.m == 1) {
      a.out[j] = row_sum<kMin>(a, w, a.x_qs, a.x_d, a.x_sums);
      continue;
    }
    for (int64_t first = 0; first < a.m; first += 8)
      rows_sum<kMin>(a, w, j, first, static_cast<int>(std::min<int64_t>(8, a.m - first)));
  }
}

}  // namespace

void quant_gemm_q5_avx2(const Q5GemmArgs& args, int64_t column_begin, int64_t column_end,
                        const Q5Row& row) {
  if (args.type == GgmlType::q5_1) return columns<true>(args, column_begin, column_end, row);
  columns<false>(args, column_begin, column_end, row);
}

}  // namespace hive
