#pragma once
// Weight rows to the kernels' unpacked layouts (quant_gemm_kernels.hpp) in
// 256-bit registers, the integers quant_matmul_reference reads: the AVX2
// kernel's unpacking, compiled by each kernel file that includes it for its
// own ISA (AVX2 and up): the functions are internal to each file (see
// gemm_kernels.hpp on why no shared inline code goes into an ISA file).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/intrinsics.hpp"
#include "kernels/quant/quant_gemm_kernels.hpp"

namespace hive {
namespace {

// A half's value in one instruction (F16C): half_bits_to_f32's for every
// finite half, and a NaN stays a NaN.
inline float half_at(const char* p) {
  uint16_t bits = 0;
  std::memcpy(&bits, p, 2);
  return _cvtsh_ss(bits);
}

// A Q8_0 or Q4_0 block's 32 signed quants (the Q4_0 nibbles less 8).
inline __m256i block_quants(const char* block, bool four_bit) {
  if (!four_bit) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 2));
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
  const __m128i low = _mm_and_si128(bytes, _mm_set1_epi8(15));
  const __m128i high = _mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(15));
  return _mm256_sub_epi8(_mm256_set_m128i(high, low), _mm256_set1_epi8(8));
}

// Q8_0 / Q4_0: a row's blocks for the AVX2 kernel.
inline void unpack_q8_blocks(const char* row, int64_t blocks, bool four_bit, UnpackedQ8_0* out) {
  const int64_t block_bytes = four_bit ? 18 : 34;
  for (int64_t b = 0; b < blocks; ++b) {
    const char* block = row + b * block_bytes;
    const __m256i w = block_quants(block, four_bit);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out[b].w), w);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out[b].abs_w), _mm256_abs_epi8(w));
    out[b].d = half_at(block);
  }
}

// The K-quants' 12 packed scale bytes (blocks.hpp) as 8 scales (bytes 0-7)
// and 8 mins (bytes 8-15): four masked word operations per half instead of
// k_scale_min's byte loop, the same 6-bit values.
inline __m128i k_scales_mins(const uint8_t* packed) {
  uint32_t u[3];
  std::memcpy(u, packed, sizeof(u));
  const uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, top2 = 0x30303030;
  const uint32_t scales_lo = u[0] & low6, mins_lo = u[1] & low6;
  const uint32_t scales_hi = (u[2] & low4) | ((u[0] >> 2) & top2);
  const uint32_t mins_hi = ((u[2] >> 4) & low4) | ((u[1] >> 2) & top2);
  return _mm_set_epi32(static_cast<int>(mins_hi), static_cast<int>(mins_lo),
                       static_cast<int>(scales_hi), static_cast<int>(scales_lo));
}

// Q4_K and Q5_K (qh null for Q4_K).
inline void unpack_k_with_mins(const char* block, const uint8_t* scales, const uint8_t* qs,
                               const uint8_t* qh, UnpackedK& out) {
  const __m128i scales_mins = k_scales_mins(scales);
  // Each sub-block's min twice (one per group of 16).
  _mm256_store_si256(reinterpret_cast<__m256i*>(out.min),
                     _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scales_mins, scales_mins)));
  alignas(16) uint8_t bytes_of[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(bytes_of), scales_mins);
  const __m256i nibble = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
  const __m256i high_bits =
      qh ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh)) : _mm256_setzero_si256();
  for (int j = 0; j < 8; ++j) {
    // Sub-block j: the low (j even) or high nibbles of bytes 32 (j / 2) ..,
    // bit 4 from bit j of qh.
    const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * (j / 2)));
    __m256i q = _mm256_and_si256(j % 2 ? _mm256_srli_epi16(bytes, 4) : bytes, nibble);
    if (qh) {
      const __m256i bit = _mm256_and_si256(_mm256_srl_epi16(high_bits, _mm_cvtsi32_si128(j)), one);
      q = _mm256_or_si256(q, _mm256_slli_epi16(bit, 4));
    }
    _mm256_store_si256(reinterpret_cast<__m256i*>(out.q + 32 * j), q);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out.pair_scale + 16 * j),
                       _mm256_set1_epi16(static_cast<int16_t>(bytes_of[j])));
  }
  out.d = half_at(block);
  out.dmin = half_at(block + 2);
}

inline void unpack_q6_k(const char* block, UnpackedK& out) {
  const auto* ql = reinterpret_cast<const uint8_t*>(block + offsetof(BlockQ6_K, ql));
  const auto* qh = reinterpret_cast<const uint8_t*>(block + offsetof(BlockQ6_K, qh));
  const auto* scales = reinterpret_cast<const int8_t*>(block + offsetof(BlockQ6_K, scales));
  const __m256i nibble = _mm256_set1_epi8(15), two_bits = _mm256_set1_epi8(3);
  for (int half = 0; half < 2; ++half) {
    const __m256i highs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh + 32 * half));
    for (int k = 0; k < 4; ++k) {
      // Elements 32k + l of the half: the low (k < 2) or high nibble of
      // ql[64 half + 32 (k & 1) + l], bits 2k, 2k + 1 of qh[32 half + l].
      const __m256i lows =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 64 * half + 32 * (k & 1)));
      const __m256i low = _mm256_and_si256(k < 2 ? lows : _mm256_srli_epi16(lows, 4), nibble);
      const __m256i high =
          _mm256_and_si256(_mm256_srl_epi16(highs, _mm_cvtsi32_si128(2 * k)), two_bits);
      _mm256_store_si256(reinterpret_cast<__m256i*>(out.q + 128 * half + 32 * k),
                         _mm256_or_si256(low, _mm256_slli_epi16(high, 4)));
    }
  }
  for (int g = 0; g < 16; ++g)
    _mm_store_si128(reinterpret_cast<__m128i*>(out.pair_scale + 8 * g),
                    _mm_set1_epi16(static_cast<int16_t>(scales[g])));
  const __m256i scales16 =
      _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales)));
  _mm256_store_si256(reinterpret_cast<__m256i*>(out.min), _mm256_slli_epi16(scales16, 5));
  out.d = half_at(block + offsetof(BlockQ6_K, d));
  out.dmin = 0;
}

inline void unpack_k(GgmlType type, const char* block, UnpackedK& out) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(block);
  switch (type) {
    case GgmlType::q4_k:
      return unpack_k_with_mins(block, bytes + offsetof(BlockQ4_K, scales),
                                bytes + offsetof(BlockQ4_K, qs), nullptr, out);
    case GgmlType::q5_k:
      return unpack_k_with_mins(block, bytes + offsetof(BlockQ5_K, scales),
                                bytes + offsetof(BlockQ5_K, qs), bytes + offsetof(BlockQ5_K, qh),
                                out);
    default:
      return unpack_q6_k(block, out);
  }
}

inline bool is_k_quant(GgmlType type) {
  return type == GgmlType::q4_k || type == GgmlType::q5_k || type == GgmlType::q6_k;
}

// Weight row `row` of args' type into scratch.
inline void unpack_row(const QuantGemmArgs& args, const char* row, const QuantScratch& scratch) {
  if (!is_k_quant(args.type))
    return unpack_q8_blocks(row, args.k / kQK, args.type == GgmlType::q4_0, scratch.q8);
  const int64_t block_bytes = ggml_type_info(args.type).block_bytes;
  for (int64_t b = 0; b < args.k / kQKK; ++b)
    unpack_k(args.type, row + b * block_bytes, scratch.blocks[b]);
}

}  // namespace
}  // namespace hive
