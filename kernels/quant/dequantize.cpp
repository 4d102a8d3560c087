// Each output is one f32 rounding of an exact value: d and dmin are halves
// (11 significant bits), scales have at most 8 bits and quants 6, so every
// product before the last operation is exact and only that operation (the
// K-quants' subtraction, or Q6_K's second product) rounds. That is why these
// bits equal gguf-py's whatever order the products take. -ffp-contract=off
// (kernels/CMakeLists.txt) keeps the compiler from fusing all the same, so a
// later format whose products are not exact keeps gguf-py's roundings.
#include "kernels/quant/dequantize.hpp"

#include <bit>
#include <cstring>

#include "base/error.hpp"

namespace hive {

namespace {

// The 4-bit value of element l of sub-block j of Q4_K / Q5_K's 128 nibble bytes.
int nibble(const uint8_t* qs, int j, int l) {
  const uint8_t byte = qs[32 * (j / 2) + l];
  return (j % 2 == 0) ? (byte & 0x0f) : (byte >> 4);
}

template <class Block>
void dequantize_blocks(const void* data, int64_t num_blocks, int block_size, float* out) {
  const auto* bytes = static_cast<const char*>(data);
  for (int64_t b = 0; b < num_blocks; ++b) {
    Block block;
    std::memcpy(&block, bytes + b * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
    dequantize_block(block, out + b * block_size);
  }
}

}  // namespace

float half_bits_to_f32(uint16_t bits) {
  const uint32_t sign = uint32_t{bits & 0x8000u} << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24 is exact in f32
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | mantissa << 13);
  return std::bit_cast<float>(sign | (exponent + 112) << 23 | mantissa << 13);
}

void dequantize_block(const BlockQ8_0& block, float* out) {
  const float d = half_bits_to_f32(block.d);
  for (int i = 0; i < kQK; ++i) out[i] = static_cast<float>(block.qs[i]) * d;
}

void dequantize_block(const BlockQ4_0& block, float* out) {
  const float d = half_bits_to_f32(block.d);
  for (int i = 0; i < kQK / 2; ++i) {
    out[i] = d * static_cast<float>((block.qs[i] & 0x0f) - 8);
    out[i + kQK / 2] = d * static_cast<float>((block.qs[i] >> 4) - 8);
  }
}

void dequantize_block(const BlockQ5_0& block, float* out) {
  const float d = half_bits_to_f32(block.d);
  for (int i = 0; i < kQK; ++i) out[i] = d * static_cast<float>(q5_quant(block, i) - 16);
}

// d * q is exact (11 by 5 significant bits): the addition is the one rounding.
void dequantize_block(const BlockQ5_1& block, float* out) {
  const float d = half_bits_to_f32(block.d), m = half_bits_to_f32(block.m);
  for (int i = 0; i < kQK; ++i) out[i] = d * static_cast<float>(q5_quant(block, i)) + m;
}

void dequantize_block(const BlockQ4_K& block, float* out) {
  const float d = half_bits_to_f32(block.d), dmin = half_bits_to_f32(block.dmin);
  for (int j = 0; j < 8; ++j) {
    int scale = 0, min = 0;
    k_scale_min(block.scales, j, scale, min);
    const float step = d * static_cast<float>(scale), offset = dmin * static_cast<float>(min);
    for (int l = 0; l < 32; ++l)
      out[32 * j + l] = step * static_cast<float>(nibble(block.qs, j, l)) - offset;
  }
}

void dequantize_block(const BlockQ5_K& block, float* out) {
  const float d = half_bits_to_f32(block.d), dmin = half_bits_to_f32(block.dmin);
  for (int j = 0; j < 8; ++j) {
    int scale = 0, min = 0;
    k_scale_min(block.scales, j, scale, min);
    const float step = d * static_cast<float>(scale), offset = dmin * static_cast<float>(min);
    for (int l = 0; l < 32; ++l) {
      const int q = nibble(block.qs, j, l) | (((block.qh[l] >> j) & 1) << 4);
      out[32 * j + l] = step * static_cast<float>(q) - offset;
    }
  }
}

void dequantize_block(const BlockQ6_K& block, float* out) {
  const float d = half_bits_to_f32(block.d);
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = block.ql + 64 * half;
    const uint8_t* qh = block.qh + 32 * half;
    for (int k = 0; k < 4; ++k) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t low_byte = ql[32 * (k & 1) + l];
        const int low = k < 2 ? (low_byte & 0x0f) : (low_byte >> 4);
        const int high = (qh[l] >> (2 * k)) & 3;
        const int i = 128 * half + 32 * k + l;
        const float step = d * static_cast<float>(block.scales[i / 16]);
        out[i] = step * static_cast<float>((low | high << 4) - 32);
      }
    }
  }
}

void dequantize_to_f32(GgmlType type, const void* data, int64_t numel, float* out) {
  const GgmlTypeInfo info = ggml_type_info(type);
  check(numel >= 0 && numel % info.block_size == 0, "dequantize_to_f32: ", numel,
        " elements are not whole ", info.name, " blocks of ", info.block_size);
  if (numel == 0) return;  // an empty tensor's pointers may be null, which memcpy must not see
  const int64_t num_blocks = numel / info.block_size;
  const int block_size = static_cast<int>(info.block_size);
  const auto* bytes = static_cast<const char*>(data);
  switch (type) {
    case GgmlType::f32:
      std::memcpy(out, data, static_cast<size_t>(numel) * 4);
      return;
    case GgmlType::f16:
    case GgmlType::bf16:
      for (int64_t i = 0; i < numel; ++i) {
        uint16_t bits = 0;
        std::memcpy(&bits, bytes + 2 * i, 2);
        out[i] = type == GgmlType::f16 ? half_bits_to_f32(bits)
                                       : std::bit_cast<float>(uint32_t{bits} << 16);
      }
      return;
    case GgmlType::q8_0:
      return dequantize_blocks<BlockQ8_0>(data, num_blocks, block_size, out);
    case GgmlType::q4_0:
      return dequantize_blocks<BlockQ4_0>(data, num_blocks, block_size, out);
    case GgmlType::q5_0:
      return dequantize_blocks<BlockQ5_0>(data, num_blocks, block_size, out);
    case GgmlType::q5_1:
      return dequantize_blocks<BlockQ5_1>(data, num_blocks, block_size, out);
    case GgmlType::q4_k:
      return dequantize_blocks<BlockQ4_K>(data, num_blocks, block_size, out);
    case GgmlType::q5_k:
      return dequantize_blocks<BlockQ5_K>(data, num_blocks, block_size, out);
    case GgmlType::q6_k:
      return dequantize_blocks<BlockQ6_K>(data, num_blocks, block_size, out);
  }
  fail("dequantize_to_f32: unknown ggml type ", static_cast<uint32_t>(type));
}

}  // namespace hive
