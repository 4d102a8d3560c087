#include "kernels/cpu/dot.hpp"

#include <cstdio>
#include <cstdlib>

#include "kernels/cpu/isa_clones.hpp"
#include "kernels/dtype.hpp"

namespace hive::cpu {

namespace {

// The one summation order of every dot; `load(i)` gives b[i] as f32, exactly.
template <class Load>
inline float sum_products(const float* a, const Load& load, int64_t n) {
  constexpr int kLanes = 16;
  float partial[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int lane = 0; lane < kLanes; ++lane) partial[lane] += a[i + lane] * load(i + lane);
  for (int lane = 0; i < n; ++i, ++lane) partial[lane] += a[i] * load(i);
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int lane = 0; lane < width; ++lane) partial[lane] += partial[lane + width];
  return partial[0];
}

}  // namespace

#if defined(HIVE_SANITIZER_TAKES_V3)
namespace {
// A sanitizer build runs the x86-64-v3 copies only (isa_clones.hpp): on an
// older CPU it stops here, before the first kernel, rather than on an
// illegal instruction.
[[maybe_unused]] const bool kCpuHasV3 = [] {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c"))
    return true;
  std::fputs("hive: this sanitizer build needs an x86-64-v3 CPU (AVX2, FMA, F16C)\n", stderr);
  std::exit(1);
}();
}  // namespace
#endif

// Each built for x86-64-v3 (AVX2, F16C) and the baseline (isa_clones.hpp).
#define HIVE_DOT_CLONES HIVE_CLONES_UP_TO_V3

HIVE_DOT_CLONES
float dot(const float* a, const float* b, int64_t n) {
  return sum_products(
      a, [b](int64_t i) { return b[i]; }, n);
}

HIVE_DOT_CLONES
float dot_bf16(const float* a, const uint16_t* b, int64_t n) {
  return sum_products(
      a, [b](int64_t i) { return bf16_to_f32(b[i]); }, n);
}

HIVE_DOT_CLONES
float dot_f16(const float* a, const uint16_t* b, int64_t n) {
  return sum_products(
      a, [b](int64_t i) { return f16_to_f32(b[i]); }, n);
}

}  // namespace hive::cpu
