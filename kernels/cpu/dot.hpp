#pragma once
#include <cstdint>

namespace hive::cpu {

// sum_i a[i] * b[i] in f32 with 16 independent partial sums, combined in a
// fixed order: vectorisable without -ffast-math, and the result depends only
// on the inputs (not on threads or on which rows are batched together).
float dot(const float* a, const float* b, int64_t n);

}  // namespace hive::cpu
