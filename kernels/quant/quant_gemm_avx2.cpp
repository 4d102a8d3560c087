// The quantized matmul on AVX2 (vpmaddubsw, vpmaddwd), in the order of
// quant_matmul.hpp: what quant_gemm_avx512_vnni.cpp does, 32 bytes at a time
// and without VNNI's fused int8 dot products. vpmaddubsw saturates its int16
// pairs, so each product is arranged to fit: |w| (<= 128) times sign(w) * x
// (|x| <= 127) for Q8_0 / Q4_0, and quants <= 63 times x for the K-quants.
#if defined(__x86_64__)
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/cpu/intrinsics.hpp"
#include "kernels/quant/quant_block_sums.hpp"
#include "kernels/quant/quant_gemm_kernels.hpp"
#include "kernels/quant/quant_unpack.hpp"

namespace hive {
namespace {

// A Q8_0 / Q4_0 block's 8 sums of 4 products w x: |w| times sign(w) x in
// int16 pairs, then the pairs added.
inline __m256i group_sums(__m256i w, __m256i abs_w, __m256i x) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(abs_w, _mm256_sign_epi8(x, w)),
                           _mm256_set1_epi16(1));
}

// m = 1, Q8_0 / Q4_0: a column's blocks straight into registers, 8 at a
// time: their exact sums through block_totals, then their fmas in turn.
void q8_column(const QuantGemmArgs& a, int64_t column, const char* row, StreamAhead& ahead) {
  const bool four_bit = a.type == GgmlType::q4_0;
  const int64_t blocks = a.k / kQK, block_bytes = four_bit ? 18 : 34;
  const auto sums_of = [&](int64_t b) {
    const __m256i w = block_quants(row + b * block_bytes, four_bit);
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.x_qs + b * 32));
    return group_sums(w, _mm256_abs_epi8(w), x);
  };
  float s = 0;
  int64_t b = 0;
  for (; b + 8 <= blocks; b += 8) {
    ahead.upto(row + (b + 8) * block_bytes);
    __m256i sums[8];
    alignas(32) float w_d[8];
    for (int t = 0; t < 8; ++t) {
      sums[t] = sums_of(b + t);
      w_d[t] = half_at(row + (b + t) * block_bytes);
    }
    const __m256 d = _mm256_mul_ps(_mm256_load_ps(w_d), _mm256_loadu_ps(a.x_d + b));
    s = fma_in_order(_mm256_cvtepi32_ps(block_totals(sums)), d, s);
  }
  for (; b < blocks; ++b) {
    ahead.upto(row + (b + 1) * block_bytes);
    const float d = half_at(row + b * block_bytes) * a.x_d[b];
    s = std::fma(static_cast<float>(lane_total(sums_of(b))), d, s);
  }
  a.out[column] = s;
}

// Four rows' int32 vectors summed: lane r of the result is row r's sum.
inline __m128i sum_rows(__m256i v0, __m256i v1, __m256i v2, __m256i v3) {
  const __m256i s = _mm256_hadd_epi32(_mm256_hadd_epi32(v0, v1), _mm256_hadd_epi32(v2, v3));
  return _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
}

// m > 1, Q8_0 / Q4_0: an unpacked column against 4 rows at a time; per
// block the rows' exact sums gathered by one tree, then each row's fma on
// its lane.
void q8_rows(const QuantGemmArgs& a, int64_t column, const QuantScratch& s) {
  const int64_t blocks = a.x_blocks;
  by_row_tiles(a, [&](auto tile_rows, int64_t first) {
    constexpr int kRows = decltype(tile_rows)::value;
    const int8_t* x_qs = a.x_qs + first * blocks * 32;
    const float* x_d = a.x_d + first * blocks;
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
      const UnpackedQ8_0& u = s.q8[b];
      const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.w));
      const __m256i abs_w = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.abs_w));
      __m256i sums[kTileRows];
      alignas(16) float xd[kTileRows] = {};
      for (int r = 0; r < kTileRows; ++r) {
        sums[r] = _mm256_setzero_si256();
        if (r >= kRows) continue;  // zero sums for the rows the tile lacks
        const __m256i x =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x_qs + (r * blocks + b) * 32));
        sums[r] = group_sums(w, abs_w, x);
        xd[r] = x_d[r * blocks + b];
      }
      const __m128i total = sum_rows(sums[0], sums[1], sums[2], sums[3]);
      const __m128 d = _mm_mul_ps(_mm_set1_ps(u.d), _mm_load_ps(xd));
      acc = _mm_fmadd_ps(_mm_cvtepi32_ps(total), d, acc);
    }
    alignas(16) float out[kTileRows];
    _mm_store_ps(out, acc);
    for (int r = 0; r < kRows; ++r) a.out[(first + r) * a.n + column] = out[r];
  });
}

// K-quants: an unpacked column against 4 rows at a time. Per
// block each row's exact sums P = sum of pair_scale * (q . x) and M = sum
// of min * bsums, the rows' sums gathered by one tree, the block's scaling
// of quant_matmul.hpp on the rows at once: the same fma per lane.
void k_rows(const QuantGemmArgs& a, int64_t column, const QuantScratch& s) {
  const int64_t blocks = a.k / kQKK;
  const bool offset_in_a = a.type == GgmlType::q6_k;
  const __m128 sign = _mm_set1_ps(-0.0f);
  by_row_tiles(a, [&](auto tile_rows, int64_t first) {
    constexpr int kRows = decltype(tile_rows)::value;
    const BlockQ8_K* x = a.x_k + first * blocks;
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
      const UnpackedK& u = s.blocks[b];
      const __m256i min = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.min));
      __m256i p[kTileRows], m[kTileRows];
      alignas(16) float x_d[kTileRows] = {};
      for (int r = 0; r < kTileRows; ++r) {
        p[r] = m[r] = _mm256_setzero_si256();
        if (r >= kRows) continue;  // zero sums for the rows the tile lacks
        const BlockQ8_K& xb = x[r * blocks + b];
        for (int c = 0; c < 8; ++c) {
          const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.q + 32 * c));
          const __m256i scale =
              _mm256_load_si256(reinterpret_cast<const __m256i*>(u.pair_scale + 16 * c));
          const __m256i xc = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.qs + 32 * c));
          p[r] = _mm256_add_epi32(p[r], _mm256_madd_epi16(_mm256_maddubs_epi16(q, xc), scale));
        }
        const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.bsums));
        m[r] = _mm256_madd_epi16(bsums, min);
        x_d[r] = xb.d;
      }
      const __m128 xd = _mm_load_ps(x_d);
      const __m128i sum_p = sum_rows(p[0], p[1], p[2], p[3]);
      const __m128i sum_m = sum_rows(m[0], m[1], m[2], m[3]);
      const __m128 scale = _mm_mul_ps(_mm_set1_ps(u.d), xd);
      if (offset_in_a) {
        acc = _mm_fmadd_ps(scale, _mm_cvtepi32_ps(_mm_sub_epi32(sum_p, sum_m)), acc);
      } else {
        acc = _mm_fmadd_ps(scale, _mm_cvtepi32_ps(sum_p), acc);
        const __m128 scale_min = _mm_xor_ps(_mm_mul_ps(_mm_set1_ps(u.dmin), xd), sign);
        acc = _mm_fmadd_ps(scale_min, _mm_cvtepi32_ps(sum_m), acc);
      }
    }
    alignas(16) float sums[kTileRows];
    _mm_store_ps(sums, acc);
    for (int r = 0; r < kRows; ++r) a.out[(first + r) * a.n + column] = sums[r];
  });
}

}  // namespace

void quant_gemm_columns_avx2(const QuantGemmArgs& args, int64_t column_begin, int64_t column_end,
                             const QuantScratch& scratch) {
  const bool k_quant = is_k_quant(args.type);
  // Decode streams the task's rows (quant_gemm_kernels.hpp).
  StreamAhead ahead{args.w + column_begin * args.w_row_bytes + kStreamAhead};
  for (int64_t j = column_begin; j < column_end; ++j) {
    const char* row = args.w + j * args.w_row_bytes;
    if (args.m == 1 && !k_quant) {
      q8_column(args, j, row, ahead);
      continue;
    }
    if (args.m == 1) ahead.upto(row + args.w_row_bytes);
    unpack_row(args, row, scratch);
    if (!k_quant) {
      q8_rows(args, j, scratch);
    } else {
      k_rows(args, j, scratch);
    }
  }
}

}  // namespace hive
#endif  // __x86_64__
