#pragma once
// quantize_row_q8_0 / quantize_row_q8_k on AVX-512 (quantize_avx512.cpp,
// its own -m flags): the same bits as the scalar code, which calls them
// where the CPU kernel path has AVX-512.
#include <cstdint>

#include "kernels/quant/blocks.hpp"

namespace hive {

void quantize_row_q8_0_avx512(const float* x, int64_t k, BlockQ8_0* out);
void quantize_row_q8_k_avx512(const float* x, int64_t k, BlockQ8_K* out);

}  // namespace hive
