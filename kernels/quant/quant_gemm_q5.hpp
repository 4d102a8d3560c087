#pragma once
// Q5_0 and Q5_1 weights on the AVX2 path (quant_matmul.cpp routes them
// here): the activations as Q8_0 blocks, each output in quant_matmul.hpp's
// Q8_0 order (one fma per block in turn; Q5_1 adds its minimum per block).
// The kernel (quant_gemm_q5_avx2.cpp) multiplies the unsigned quants 0..31
// by the activations with vpmaddubsw and takes the offset of Q5_0 (16 * the
// block's activation sum) in integers. AVX-512 VNNI runs them with the
// other 32-blocks (quant_gemm_avx512_vnni.cpp), the scalar path with
// quant_matmul_reference.
#include <cstdint>

#include "kernels/quant/ggml_type.hpp"

namespace hive {

struct QuantMatmul;

// Runs one Q5_0 / Q5_1 product on the pool (checked by the caller); the
// CPU must have AVX2.
void quant_matmul_q5(const QuantMatmul& problem);

// The activations: row i's Q8_0 blocks as quants, scales and block sums
// (of the 32 quants) apart.
struct Q5GemmArgs {
  GgmlType type = GgmlType::q5_0;
  const char* w = nullptr;  // weight row j at w + j * w_row_bytes
  int64_t w_row_bytes = 0;
  int64_t blocks = 0;  // per row, k / 32
  int64_t m = 0, n = 0;
  const int8_t* x_qs = nullptr;     // row i's at x_qs + i * 32 * blocks
  const float* x_d = nullptr;       // row i's at x_d + i * blocks
  const int32_t* x_sums = nullptr;  // row i's at x_sums + i * blocks
  float* out = nullptr;             // row i at out + i * n
};

// A weight row unpacked, block b's quants 0..31 at q + 32 b, its scale and
// minimum (0 for Q5_0) at d[b] and m[b]; each array k / 32 blocks long.
struct Q5Row {
  uint8_t* q = nullptr;
  float* d = nullptr;
  float* m = nullptr;
};

// Output columns [column_begin, column_end) of every row, each weight row
// unpacked into `row` in turn.
void quant_gemm_q5_avx2(const Q5GemmArgs& args, int64_t column_begin, int64_t column_end,
                        const Q5Row& row);

}  // namespace hive
