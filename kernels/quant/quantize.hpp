#pragma once
// f32 rows to ggml blocks, as llama.cpp's reference quantizers compute them
// (ggml-quants.c, the `_ref` functions): the activations of a quantized
// matmul (Q8_0 for Q8_0 / Q4_0 weights, Q8_K for the K-quants), and Q4_0 /
// Q8_0 weights for tests and benchmarks. Plain scalar code, one f32 rounding
// per operation (-ffp-contract=off), so every kernel path that shares these
// blocks shares their bits.
#include <cstdint>

#include "kernels/quant/blocks.hpp"

namespace hive {

// k values (a multiple of 32) to k / 32 blocks: d = max|x| / 127 stored as
// f16, qs = round(x / d) half away from zero, so |qs| <= 127.
void quantize_row_q8_0(const float* x, int64_t k, BlockQ8_0* out);

// k values (a multiple of 256) to k / 256 blocks: with x_max the value of
// largest magnitude, qs = round-to-nearest-even(x * (-127 / x_max)) capped at
// 127 (so qs is never -128), d = 1 / (-127 / x_max), bsums the sums of 16.
void quantize_row_q8_k(const float* x, int64_t k, BlockQ8_K* out);

// Weights: k values (a multiple of 32) to k / 32 Q4_0 blocks, d = x_max / -8
// as f16, nibble = min(15, trunc(x / d + 8.5)).
void quantize_row_q4_0(const float* x, int64_t k, BlockQ4_0* out);

}  // namespace hive
