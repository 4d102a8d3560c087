#include "kernels/cpu/dot.hpp"

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

// Each built twice: for x86-64-v3 (AVX2, F16C) and the baseline; the loader
// picks one per machine, so one binary runs everywhere and fast where it can.
// Not under ASan or TSan: the loader runs the clones' resolver before the
// sanitizer's runtime is up, and an instrumented resolver crashes there.
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define HIVE_DOT_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define HIVE_DOT_CLONES
#endif

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
