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

// Weights: k values (a multiple of 32) to Q5_0 blocks, d = x_max / -16 as
// f16, q = min(31, trunc(x / d + 16.5)); or to Q5_1 blocks, d = (max - min)
// / 31 and m = min as f16, q = min(31, trunc((x - min) / d + 0.5)) (x / d
// as x times the f32 inverse of d, as llama.cpp and gguf-py compute it).
void quantize_row_q5_0(const float* x, int64_t k, BlockQ5_0* out);
void quantize_row_q5_1(const float* x, int64_t k, BlockQ5_1* out);

// Weights, k a multiple of 256, llama.cpp's reference K-quantizers (no
// importance matrix), as `hive quantize` writes them:
//   Q4_K / Q5_K: per sub-block of 32, a scale and a min fitted by weighted
//     least squares over a grid of candidate step sizes (weights
//     rms(sub-block) + |x|), levels 0..15 / 0..31; the 8 scales and mins
//     then quantized to 6 bits against the block's largest, and every value
//     requantized with the stored scale and min.
//   Q6_K: per sub-block of 16, a signed scale fitted with weights x^2 over
//     19 step sizes, levels -32..31; the 16 scales quantized to int8 against
//     the block's largest (d = that / -128).
void quantize_row_q4_k(const float* x, int64_t k, BlockQ4_K* out);
void quantize_row_q5_k(const float* x, int64_t k, BlockQ5_K* out);
void quantize_row_q6_k(const float* x, int64_t k, BlockQ6_K* out);

}  // namespace hive
