#pragma once
// Plain scalar dequantization of ggml blocks to f32: the reference that any
// faster kernel is checked against. Its bits equal gguf-py's
// `gguf.quants.dequantize` (tests/loader/test_gguf_fixture.cpp): the same
// float operations in the same order, each rounded to f32, never fused.
#include <cstdint>

#include "kernels/quant/blocks.hpp"
#include "kernels/quant/ggml_type.hpp"

namespace hive {

// Widens IEEE half bits to f32 exactly, as numpy does: a NaN keeps its
// payload and is not quieted (hardware conversions quiet it).
float half_bits_to_f32(uint16_t bits);

// One block's elements, in order, to out[0 .. block size).
void dequantize_block(const BlockQ8_0& block, float* out);
void dequantize_block(const BlockQ4_0& block, float* out);
void dequantize_block(const BlockQ5_0& block, float* out);
void dequantize_block(const BlockQ5_1& block, float* out);
void dequantize_block(const BlockQ4_K& block, float* out);
void dequantize_block(const BlockQ5_K& block, float* out);
void dequantize_block(const BlockQ6_K& block, float* out);

// Dequantizes `numel` elements of `type` stored at `data` (any alignment)
// into out[0 .. numel). numel must be a multiple of the type's block size.
void dequantize_to_f32(GgmlType type, const void* data, int64_t numel, float* out);

}  // namespace hive
