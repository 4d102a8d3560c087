#pragma once
#include <cstdint>

namespace hive::cpu {

// sum_i a[i] * b[i] in f32 with 16 independent partial sums, combined in a
// fixed order: vectorisable without -ffast-math, and on a given machine the
// result depends only on the inputs (not on threads or on which rows are
// batched together). The AVX2 clone fuses multiply-adds and the baseline one
// does not, so two machines may differ in the last bits.
float dot(const float* a, const float* b, int64_t n);

// The same with b stored as bf16 or f16 bits, widened as it is read: the
// bits of dot(a, b converted to f32), without writing the converted row.
float dot_bf16(const float* a, const uint16_t* b, int64_t n);
float dot_f16(const float* a, const uint16_t* b, int64_t n);

}  // namespace hive::cpu
