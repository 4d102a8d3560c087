#pragma once
// out[m, n] = x[m, k] . w[n, k]^T with w a row-major array of ggml blocks of
// one type (row j: k / block_size blocks), x and out f32. As llama.cpp
// computes it: each row of x is quantized to 8 bits per block (Q8_0 for
// Q8_0 / Q4_0 weights, Q8_K for the K-quants, quantize.hpp) and each block
// pair's dot product is an exact int32 sum; only the per-block scaling and
// the sum over blocks are in floating point, in one order (below) that
// every kernel path follows with the same operations. So a row's bits do
// not depend on m, on the thread count or on the kernel path: the paths
// equal the scalar reference (quant_matmul_reference) bit for bit.
//
// The one order, per output (i, j), with fma(a, b, c) one rounding: one
// f32 sum s over the blocks in order, zero at the start.
//   Q8_0 / Q4_0: with S_b the exact int32 sum of block b's 32 products w a,
//     s = fma(float(S_b), f32(d_w) * f32(d_a), s).
//   Q5_0: as Q8_0, its weights q - 16 (-16..15).
//   Q5_1: as Q8_0 with its weights q (0..31), each block then adding its
//     minimum: s = fma(float(sum_t a[t]), f32(m_w) * f32(d_a), s).
//   K-quants: with S_g the exact sum of q * a over element group g of 16
//     (q unsigned: 0..15, 0..31, 0..63), sc_g and m_g the group's scale and
//     min, bsum_g the activation's sums:
//       Q4_K, Q5_K: A = sum sc_g S_g, B = sum m_g bsum_g;
//                   s = fma(d_w * d_a, float(A), s);
//                   s = fma(-(dmin_w * d_a), float(B), s)
//       Q6_K:       A = sum sc_g (S_g - 32 bsum_g); s = fma(d_w * d_a, float(A), s)
#include <cstdint>
#include <span>
#include <string_view>

#include "kernels/quant/ggml_type.hpp"

namespace hive {

struct QuantMatmul {
  const float* x = nullptr;  // [m, k]
  const void* w = nullptr;   // [n, k] as blocks of `type`, any alignment
  GgmlType type = GgmlType::q8_0;
  float* out = nullptr;  // [m, n]
  int64_t m = 0, k = 0, n = 0;
};

// The block types a quantized matmul takes: Q8_0, Q4_0, Q5_0, Q5_1, Q4_K,
// Q5_K, Q6_K.
bool quant_matmul_supports(GgmlType type);

// The oracle: plain loops in the order above, one output at a time.
void quant_matmul_reference(const QuantMatmul& problem);

// The CPU kernel path's (cpu_features.hpp) kernel: the reference on scalar,
// AVX2 on avx2, AVX-512 VNNI from avx512 up where the CPU has VNNI (else
// AVX2), on the CPU thread pool, tasks split by output columns. Q5_0 and
// Q5_1 have their own kernels (quant_gemm_q5.hpp), on the same paths.
void quant_matmul(const QuantMatmul& problem);

// Several products as one job on the pool (and one for quantizing their
// activations, once per x shared by products that read the same blocks),
// each output bit for bit what quant_matmul gives it: the projections of one
// x, the experts of an MoE layer. Outputs must not overlap inputs.
void quant_matmul_group(std::span<const QuantMatmul> problems);

// The kernel quant_matmul runs on the current path: "scalar", "avx2",
// "avx512_vnni".
std::string_view quant_matmul_kernel_name();

}  // namespace hive
