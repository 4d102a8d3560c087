#pragma once
// Weight rows to the kernels' unpacked layouts (quant_gemm_kernels.hpp), as
// plain loops that each kernel file compiles for its own ISA: the functions
// are internal to each file that includes this one (see gemm_kernels.hpp on
// why no shared inline code goes into an ISA file).
#include <cstdlib>
#include <cstring>

#include "kernels/quant/dequantize.hpp"
#include "kernels/quant/quant_gemm_kernels.hpp"

namespace hive {
namespace {

template <class Block>
Block load_block(const char* row, int64_t b) {
  Block block;
  std::memcpy(&block, row + b * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
  return block;
}

inline void signed_quants(const BlockQ8_0& block, int8_t* w) {
  std::memcpy(w, block.qs, kQK);
}

inline void signed_quants(const BlockQ4_0& block, int8_t* w) {
  for (int i = 0; i < kQK / 2; ++i) {
    w[i] = static_cast<int8_t>((block.qs[i] & 15) - 8);
    w[i + kQK / 2] = static_cast<int8_t>((block.qs[i] >> 4) - 8);
  }
}

template <class Block>
void unpack_pairs(const char* row, int64_t blocks, PairQ8_0* pairs) {
  for (int64_t c = 0; c < (blocks + 1) / 2; ++c) {
    PairQ8_0& pair = pairs[c];
    for (int h = 0; h < 2; ++h) {
      int8_t* w = pair.w + 32 * h;
      float d = 0;
      if (2 * c + h < blocks) {
        const Block block = load_block<Block>(row, 2 * c + h);
        signed_quants(block, w);
        d = half_bits_to_f32(block.d);
      } else {
        std::memset(w, 0, kQK);
      }
      for (int t = 0; t < kQK; ++t) pair.abs_w[32 * h + t] = static_cast<uint8_t>(std::abs(w[t]));
      for (int g = 0; g < 8; ++g) {
        pair.offset[8 * h + g] = -128 * (w[4 * g] + w[4 * g + 1] + w[4 * g + 2] + w[4 * g + 3]);
        pair.d[8 * h + g] = d;
      }
    }
  }
}

// Q4_K and Q5_K (qh null for Q4_K).
template <class Block>
void unpack_k_with_mins(const Block& block, const uint8_t* qh, UnpackedK& out) {
  for (int j = 0; j < 8; ++j) {
    int scale = 0, min = 0;
    k_scale_min(block.scales, j, scale, min);
    for (int t = 0; t < 16; ++t) out.pair_scale[16 * j + t] = static_cast<int16_t>(scale);
    out.min[2 * j] = out.min[2 * j + 1] = static_cast<int16_t>(min);
  }
  for (int pair = 0; pair < 4; ++pair)
    for (int l = 0; l < 32; ++l) {
      const uint8_t byte = block.qs[32 * pair + l];
      out.q[64 * pair + l] = byte & 15;
      out.q[64 * pair + 32 + l] = byte >> 4;
    }
  if (qh)
    for (int j = 0; j < 8; ++j)
      for (int l = 0; l < 32; ++l)
        out.q[32 * j + l] |= static_cast<uint8_t>(((qh[l] >> j) & 1) << 4);
  out.d = half_bits_to_f32(block.d);
  out.dmin = half_bits_to_f32(block.dmin);
}

inline void unpack_k(const BlockQ4_K& block, UnpackedK& out) {
  unpack_k_with_mins(block, nullptr, out);
}

inline void unpack_k(const BlockQ5_K& block, UnpackedK& out) {
  unpack_k_with_mins(block, block.qh, out);
}

inline void unpack_k(const BlockQ6_K& block, UnpackedK& out) {
  for (int half = 0; half < 2; ++half)
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < 32; ++l) {
        const uint8_t low_byte = block.ql[64 * half + 32 * (k & 1) + l];
        const int low = k < 2 ? (low_byte & 15) : (low_byte >> 4);
        const int high = (block.qh[32 * half + l] >> (2 * k)) & 3;
        out.q[128 * half + 32 * k + l] = static_cast<uint8_t>(low | high << 4);
      }
  for (int g = 0; g < 16; ++g) {
    for (int t = 0; t < 8; ++t) out.pair_scale[8 * g + t] = block.scales[g];
    out.min[g] = static_cast<int16_t>(32 * block.scales[g]);
  }
  out.d = half_bits_to_f32(block.d);
  out.dmin = 0;
}

template <class Block>
void unpack_k_row(const char* row, int64_t blocks, UnpackedK* out) {
  for (int64_t b = 0; b < blocks; ++b) unpack_k(load_block<Block>(row, b), out[b]);
}

// Weight row `row` of args' type into scratch.
inline void unpack_row(const QuantGemmArgs& args, const char* row, const QuantScratch& scratch) {
  switch (args.type) {
    case GgmlType::q8_0:
      return unpack_pairs<BlockQ8_0>(row, args.k / kQK, scratch.pairs);
    case GgmlType::q4_0:
      return unpack_pairs<BlockQ4_0>(row, args.k / kQK, scratch.pairs);
    case GgmlType::q4_k:
      return unpack_k_row<BlockQ4_K>(row, args.k / kQKK, scratch.blocks);
    case GgmlType::q5_k:
      return unpack_k_row<BlockQ5_K>(row, args.k / kQKK, scratch.blocks);
    case GgmlType::q6_k:
      return unpack_k_row<BlockQ6_K>(row, args.k / kQKK, scratch.blocks);
    default:
      return;
  }
}

inline bool is_k_quant(GgmlType type) {
  return type == GgmlType::q4_k || type == GgmlType::q5_k || type == GgmlType::q6_k;
}

}  // namespace
}  // namespace hive
