#include "kernels/cpu/dot.hpp"

namespace hive::cpu {

// Built twice: for x86-64-v3 (AVX2) and the baseline; the loader picks one
// per machine, so one binary runs everywhere and fast where it can.
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
float dot(const float* a, const float* b, int64_t n) {
  constexpr int kLanes = 16;
  float partial[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int lane = 0; lane < kLanes; ++lane) partial[lane] += a[i + lane] * b[i + lane];
  for (int lane = 0; i < n; ++i, ++lane) partial[lane] += a[i] * b[i];
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int lane = 0; lane < width; ++lane) partial[lane] += partial[lane + width];
  return partial[0];
}

}  // namespace hive::cpu
