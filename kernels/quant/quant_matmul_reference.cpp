// The oracle of quant_matmul.hpp: each output on its own, every element's
// quant read as dequantize.cpp reads it, the order of the header written out
// as plain loops. fma is explicit and the file is built with
// -ffp-contract=off, so no other operation is fused.
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "base/error.hpp"
#include "kernels/dtype.hpp"
#include "kernels/quant/dequantize.hpp"
#include "kernels/quant/quant_gemm_kernels.hpp"
#include "kernels/quant/quant_matmul.hpp"
#include "kernels/quant/quantize.hpp"

namespace hive {

namespace {

template <class Block>
Block block_at(const void* row, int64_t b) {
  Block block;
  std::memcpy(&block, static_cast<const char*>(row) + b * static_cast<int64_t>(sizeof(Block)),
              sizeof(Block));
  return block;
}

int weight(const BlockQ8_0& block, int e) {
  return block.qs[e];
}

int weight(const BlockQ4_0& block, int e) {
  return e < kQK / 2 ? (block.qs[e] & 15) - 8 : (block.qs[e - kQK / 2] >> 4) - 8;
}

int weight(const BlockQ5_0& block, int e) {
  return q5_quant(block, e) - 16;
}

int weight(const BlockQ5_1& block, int e) {
  return q5_quant(block, e);
}

template <class Block>
float dot_q8_0(const void* w_row, const BlockQ8_0* x, int64_t blocks) {
  constexpr bool kMin = std::is_same_v<Block, BlockQ5_1>;
  float sum = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const Block w = block_at<Block>(w_row, b);
    const float d_x = half_bits_to_f32(x[b].d);
    int32_t products = 0, x_sum = 0;
    for (int e = 0; e < kQK; ++e) {
      products += weight(w, e) * x[b].qs[e];
      x_sum += x[b].qs[e];
    }
    sum = std::fma(static_cast<float>(products), half_bits_to_f32(w.d) * d_x, sum);
    if constexpr (kMin) sum = std::fma(static_cast<float>(x_sum), half_bits_to_f32(w.m) * d_x, sum);
  }
  return sum;
}

// A K-quant block as the order reads it: the unsigned quants, and per group
// of 16 the scale and the min (the offset 32 for Q6_K).
struct KBlockValues {
  int q[kQKK];
  int scale[16], min[16];
  float d = 0, dmin = 0;
};

// Q4_K and Q5_K (high_bits null for Q4_K): nibble l of sub-block j is in
// byte 32 (j / 2) + l, low for even j.
template <class Block>
KBlockValues values_of(const Block& block, const uint8_t* high_bits) {
  KBlockValues v;
  for (int j = 0; j < 8; ++j) {
    k_scale_min(block.scales, j, v.scale[2 * j], v.min[2 * j]);
    v.scale[2 * j + 1] = v.scale[2 * j];
    v.min[2 * j + 1] = v.min[2 * j];
    for (int l = 0; l < 32; ++l) {
      const uint8_t byte = block.qs[32 * (j / 2) + l];
      const int high = high_bits ? ((high_bits[l] >> j) & 1) << 4 : 0;
      v.q[32 * j + l] = (j % 2 == 0 ? byte & 15 : byte >> 4) | high;
    }
  }
  v.d = half_bits_to_f32(block.d);
  v.dmin = half_bits_to_f32(block.dmin);
  return v;
}

KBlockValues values(const BlockQ4_K& block) {
  return values_of(block, nullptr);
}

KBlockValues values(const BlockQ5_K& block) {
  return values_of(block, block.qh);
}

KBlockValues values(const BlockQ6_K& block) {
  KBlockValues v;
  for (int e = 0; e < kQKK; ++e) {
    const int half = e / 128, k = e % 128 / 32, l = e % 32;
    const uint8_t low_byte = block.ql[64 * half + 32 * (k & 1) + l];
    const int low = k < 2 ? (low_byte & 15) : (low_byte >> 4);
    v.q[e] = low | ((block.qh[32 * half + l] >> (2 * k)) & 3) << 4;
  }
  for (int g = 0; g < 16; ++g) {
    v.scale[g] = block.scales[g];
    v.min[g] = 32;
  }
  v.d = half_bits_to_f32(block.d);
  return v;
}

template <class Block>
float dot_q8_k(const void* w_row, const BlockQ8_K* x, int64_t blocks) {
  constexpr bool kOffsetInA = std::is_same_v<Block, BlockQ6_K>;
  float sum = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const KBlockValues v = values(block_at<Block>(w_row, b));
    int32_t a = 0, mins = 0;
    for (int g = 0; g < 16; ++g) {
      int32_t group = 0;
      for (int l = 0; l < 16; ++l) group += v.q[16 * g + l] * x[b].qs[16 * g + l];
      if (kOffsetInA) group -= v.min[g] * x[b].bsums[g];
      a += v.scale[g] * group;
      mins += v.min[g] * x[b].bsums[g];
    }
    sum = std::fma(v.d * x[b].d, static_cast<float>(a), sum);
    if (!kOffsetInA) sum = std::fma(-(v.dmin * x[b].d), static_cast<float>(mins), sum);
  }
  return sum;
}

template <class Block, class Activation, class Dot>
void reference_rows(const QuantMatmul& p, void (*quantize)(const float*, int64_t, Activation*),
                    int block_size, Dot dot) {
  const int64_t blocks = p.k / block_size;
  const int64_t row_bytes = blocks * static_cast<int64_t>(sizeof(Block));
  std::vector<Activation> x(static_cast<size_t>(blocks));
  for (int64_t i = 0; i < p.m; ++i) {
    quantize(p.x + i * p.k, p.k, x.data());
    for (int64_t j = 0; j < p.n; ++j)
      p.out[i * p.n + j] = dot(static_cast<const char*>(p.w) + j * row_bytes, x.data(), blocks);
  }
}

}  // namespace

bool quant_matmul_supports(GgmlType type) {
  return type == GgmlType::q8_0 || type == GgmlType::q4_0 || type == GgmlType::q4_k ||
         type == GgmlType::q5_k || type == GgmlType::q6_k || type == GgmlType::q5_0 ||
         type == GgmlType::q5_1;
}

void check_quant_matmul(const QuantMatmul& p) {
  const GgmlTypeInfo info = ggml_type_info(p.type);
  check(quant_matmul_supports(p.type), "quant_matmul: weights of type ", info.name,
        " are not a block type it takes (Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)");
  check(p.m >= 0 && p.n >= 0 && p.k >= 0, "quant_matmul: negative size m = ", p.m, ", k = ", p.k,
        ", n = ", p.n);
  check(p.k % info.block_size == 0, "quant_matmul: k = ", p.k, " is not a multiple of ", info.name,
        "'s block size ", info.block_size);
}

void quant_matmul_reference(const QuantMatmul& p) {
  check_quant_matmul(p);
  if (p.m == 0 || p.n == 0) return;
  switch (p.type) {
    case GgmlType::q8_0:
      return reference_rows<BlockQ8_0>(p, quantize_row_q8_0, kQK, dot_q8_0<BlockQ8_0>);
    case GgmlType::q4_0:
      return reference_rows<BlockQ4_0>(p, quantize_row_q8_0, kQK, dot_q8_0<BlockQ4_0>);
    case GgmlType::q5_0:
      return reference_rows<BlockQ5_0>(p, quantize_row_q8_0, kQK, dot_q8_0<BlockQ5_0>);
    case GgmlType::q5_1:
      return reference_rows<BlockQ5_1>(p, quantize_row_q8_0, kQK, dot_q8_0<BlockQ5_1>);
    case GgmlType::q4_k:
      return reference_rows<BlockQ4_K>(p, quantize_row_q8_k, kQKK, dot_q8_k<BlockQ4_K>);
    case GgmlType::q5_k:
      return reference_rows<BlockQ5_K>(p, quantize_row_q8_k, kQKK, dot_q8_k<BlockQ5_K>);
    case GgmlType::q6_k:
      return reference_rows<BlockQ6_K>(p, quantize_row_q8_k, kQKK, dot_q8_k<BlockQ6_K>);
    default:
      return;
  }
}

}  // namespace hive
