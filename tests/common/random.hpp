#pragma once
// Seeded random test inputs. The seed is printed on failure (SCOPED_TRACE);
// HIVE_TEST_SEED=N replays that run. Inputs are never all zeros.
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/dtype.hpp"

namespace hive::test {

inline uint64_t test_seed() {
  static const uint64_t seed = [] {
    const char* fixed = std::getenv("HIVE_TEST_SEED");
    return fixed != nullptr && *fixed != '\0' ? std::stoull(fixed)
                                              : uint64_t{std::random_device{}()};
  }();
  return seed;
}

inline std::vector<float> random_floats(std::mt19937_64& rng, size_t n, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> out(n);
  for (float& v : out) v = dist(rng);
  return out;
}

// Rounds values through a storage dtype and returns the stored bits.
inline std::vector<uint16_t> to_half_bits(const std::vector<float>& values, DType dtype) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    bits[i] = dtype == DType::bf16 ? f32_to_bf16(values[i]) : f32_to_f16(values[i]);
  return bits;
}

// Normalised mean squared error mse(a, b) / mse(b, 0), as llama.cpp's
// test-backend-ops compares backends.
inline double nmse(const float* a, const float* b, size_t n) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < n; ++i) {
    err += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    ref += static_cast<double>(b[i]) * b[i];
  }
  return ref == 0 ? err : err / ref;
}

// bf16 keeps 8 significant bits: one rounding moves a value by at most 2^-8
// of itself, a normalised squared error of at most 2^-16. Attention in the
// bf16 mode rounds q and then the softmax weights, two roundings in a row,
// so its bound is (2 * 2^-8)^2. A bound near the mean error (1e-5 was) fails
// on the rare seed whose step has few outputs to average over.
inline constexpr double kBf16RoundingNmse = 1.0 / 65536;
inline constexpr double kBf16AttentionNmse = 4 * kBf16RoundingNmse;

}  // namespace hive::test
