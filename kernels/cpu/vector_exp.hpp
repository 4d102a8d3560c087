#pragma once
// exp(x) as plain arithmetic a loop vectorizes, where std::exp is a call per
// value: Cody-Waite reduction x = n ln2 + r, |r| <= ln2 / 2, Cephes' degree-6
// polynomial for e^r (within 2 ulp of expf), then 2^n by the exponent bits.
// x is clamped to [-100, 88]: below 2^-126 the result is 0 (also for -inf),
// and above, the largest power of two left finite. Every product that feeds
// a sum is an explicit fma, so the scalar and vector forms of one function,
// and every clone of it on a machine with FMA, give the same bits.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace hive::cpu {

inline __attribute__((always_inline)) float vector_exp(float x) {
  x = std::min(std::max(x, -100.0f), 88.0f);
  const float shifter = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = std::fma(x, 1.44269504088896341f, shifter) - shifter;
  float r = std::fma(n, -0.693359375f, x);  // ln2 in two parts, the first exact in n
  r = std::fma(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  p = std::fma(p, r * r, r) + 1.0f;
  const int32_t e = static_cast<int32_t>(n);
  const float scale = std::bit_cast<float>(static_cast<uint32_t>(std::max(e + 127, 0)) << 23);
  return e < -126 ? 0.0f : p * scale;
}

}  // namespace hive::cpu
