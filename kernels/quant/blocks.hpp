#pragma once
// ggml's quantized blocks, byte for byte as GGUF files store them. `d` and
// `dmin` are IEEE half floats kept as their bits. Every block is read
// through memcpy (dequantize.cpp): a tensor's blocks sit wherever the file
// put them, with no alignment beyond the tensor's own.
#include <cstdint>

#include "kernels/quant/ggml_type.hpp"

namespace hive {

inline constexpr int kQK = 32;    // elements in a Q4_0 / Q8_0 block
inline constexpr int kQKK = 256;  // elements in a K-quant super-block

// Q8_0: x[i] = d * qs[i].
//   [d f16][qs: 32 x int8]                                          34 bytes
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};

// Q4_0: byte j holds x[j] in its low nibble and x[j + 16] in its high one;
// x = d * (nibble - 8).
//   [d f16][qs: 16 bytes, lo = x[0..15], hi = x[16..31]]            18 bytes
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK / 2];
};

// Q5_0: element i's low 4 bits as Q4_0 stores them (byte i % 16, low nibble
// for i < 16), its fifth bit bit i of qh (little-endian);
// x = d * (q - 16), q = 0..31.
//   [d f16][qh: 4][qs: 16]                                          22 bytes
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// Q5_1: Q5_0's quants with a minimum instead of the offset: x = d * q + m.
//   [d f16][m f16][qh: 4][qs: 16]                                   24 bytes
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// Element i (0..31) of a Q5_0 / Q5_1 block: 0..31.
template <class Block>
int q5_quant(const Block& block, int i) {
  const int low = i < kQK / 2 ? (block.qs[i] & 15) : (block.qs[i - kQK / 2] >> 4);
  return low | ((block.qh[i / 8] >> (i % 8)) & 1) << 4;
}

// The K-quants' 6-bit scales sc[0..7] and mins m[0..7] of the 8 sub-blocks,
// packed into 12 bytes (j = 0..3):
//   byte j      bits 7..6: sc[j+4] >> 4   bits 5..0: sc[j]
//   byte j + 4  bits 7..6: m[j+4] >> 4    bits 5..0: m[j]
//   byte j + 8  bits 7..4: m[j+4] & 15    bits 3..0: sc[j+4] & 15
inline constexpr int kKScaleBytes = 12;

// Q4_K: 8 sub-blocks of 32. Bytes 32k..32k+31 of qs hold sub-block 2k in
// their low nibbles and sub-block 2k+1 in their high ones;
// x = (d * sc) * q - (dmin * m).
//   [d f16][dmin f16][scales 12][qs: 128 bytes = 4 x (32 lo | 32 hi)]  144 bytes
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kQKK / 2];
};

// Q5_K: Q4_K's nibbles plus a fifth bit: bit s of qh[l] is the high bit of
// element l of sub-block s; x = (d * sc) * q - (dmin * m), q = 0..31.
//   [d f16][dmin f16][scales 12][qh: 32][qs: 128]                  176 bytes
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kQKK / 8];
  uint8_t qs[kQKK / 2];
};

// Q6_K: 16 sub-blocks of 16, each with an int8 scale; x = (d * sc) * (q - 32).
// Each half h (128 elements) uses ql[64h..64h+63] and qh[32h..32h+31]:
// element 32k + l of the half (k = 0..3, l = 0..31) takes the low or high
// nibble (k >= 2) of ql[64h + 32(k & 1) + l] and bits 2k, 2k+1 of qh[32h + l].
//   [ql: 128][qh: 64][scales: 16 x int8][d f16]                    210 bytes
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];
  uint8_t qh[kQKK / 4];
  int8_t scales[kQKK / 16];
  uint16_t d;
};

// Q8_K: the K-quants' activations, never stored in a file: x[i] = d * qs[i],
// and bsums[g] the exact sum of qs[16g .. 16g+15], which the kernels use to
// apply a sub-block's min (or Q6_K's offset of 32) once per 16 values.
//   [d f32][qs: 256 x int8][bsums: 16 x int16]                      292 bytes
struct BlockQ8_K {
  float d;
  int8_t qs[kQKK];
  int16_t bsums[kQKK / 16];
};

// The sizes ggml and every GGUF file use.
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);
static_assert(ggml_type_info(GgmlType::q5_0).block_bytes == sizeof(BlockQ5_0));
static_assert(ggml_type_info(GgmlType::q5_1).block_bytes == sizeof(BlockQ5_1));
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);
static_assert(ggml_type_info(GgmlType::q8_0).block_bytes == sizeof(BlockQ8_0));
static_assert(ggml_type_info(GgmlType::q4_0).block_bytes == sizeof(BlockQ4_0));
static_assert(ggml_type_info(GgmlType::q4_k).block_bytes == sizeof(BlockQ4_K));
static_assert(ggml_type_info(GgmlType::q5_k).block_bytes == sizeof(BlockQ5_K));
static_assert(ggml_type_info(GgmlType::q6_k).block_bytes == sizeof(BlockQ6_K));

// Sub-block j's 6-bit scale and min from the K-quants' 12 packed bytes
// (Q4_K, Q5_K): the one unpacking the dequantization, the reference matmul
// and the fast kernels share.
inline void k_scale_min(const uint8_t* scales, int j, int& scale, int& min) {
  if (j < 4) {
    scale = scales[j] & 63;
    min = scales[j + 4] & 63;
  } else {
    scale = (scales[j + 4] & 0x0f) | ((scales[j - 4] >> 6) << 4);
    min = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
  }
}

}  // namespace hive
