#include "kernels/quant/quantize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.hpp"
#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/intrinsics.hpp"
#include "kernels/dtype.hpp"
#include "kernels/quant/quantize_simd.hpp"

namespace hive {

namespace {

void check_blocks(const char* what, int64_t k, int block_size) {
  check(k >= 0 && k % block_size == 0, what, ": k = ", k, " is not a multiple of the block size ",
        block_size);
}

// The element of largest magnitude (the first such), with its sign.
float signed_max(const float* x, int count) {
  float max = 0.0f, amax = 0.0f;
  for (int i = 0; i < count; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  return max;
}

// std::lrint: to nearest, ties to even, under the default rounding mode.
// On x86-64 the one instruction lrint stands for, inline: the call into
// libm per element weighed on every K-quant matmul.
long lrint_inline(float v) {
#if defined(__x86_64__)
  return _mm_cvtss_si64(_mm_set_ss(v));
#else
  return std::lrint(v);
#endif
}

}  // namespace

void quantize_row_q8_0(const float* x, int64_t k, BlockQ8_0* out) {
  check_blocks("quantize_row_q8_0", k, kQK);
#if defined(__x86_64__)
  if (cpu::cpu_kernel_path() >= cpu::CpuPath::avx512) return quantize_row_q8_0_avx512(x, k, out);
#endif
  for (int64_t b = 0; b < k / kQK; ++b, x += kQK) {
    float amax = 0.0f;
    for (int i = 0; i < kQK; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].d = f32_to_f16(d);
    for (int i = 0; i < kQK; ++i) out[b].qs[i] = static_cast<int8_t>(std::round(x[i] * inverse));
  }
}

void quantize_row_q8_k(const float* x, int64_t k, BlockQ8_K* out) {
  check_blocks("quantize_row_q8_k", k, kQKK);
#if defined(__x86_64__)
  if (cpu::cpu_kernel_path() >= cpu::CpuPath::avx512) return quantize_row_q8_k_avx512(x, k, out);
#endif
  for (int64_t b = 0; b < k / kQKK; ++b, x += kQKK) {
    BlockQ8_K& block = out[b];
    const float max = signed_max(x, kQKK);
    if (max == 0.0f) {
      std::memset(&block, 0, sizeof(block));
      continue;
    }
    const float inverse = -127.0f / max;
    for (int i = 0; i < kQKK; ++i)
      block.qs[i] = static_cast<int8_t>(std::min(127L, lrint_inline(inverse * x[i])));
    for (int g = 0; g < kQKK / 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += block.qs[16 * g + i];
      block.bsums[g] = static_cast<int16_t>(sum);
    }
    block.d = 1.0f / inverse;
  }
}

void quantize_row_q4_0(const float* x, int64_t k, BlockQ4_0* out) {
  check_blocks("quantize_row_q4_0", k, kQK);
  for (int64_t b = 0; b < k / kQK; ++b, x += kQK) {
    const float d = signed_max(x, kQK) / -8.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].d = f32_to_f16(d);
    for (int i = 0; i < kQK / 2; ++i) {
      const auto low = std::min(15, static_cast<int>(static_cast<int8_t>(x[i] * inverse + 8.5f)));
      const auto high =
          std::min(15, static_cast<int>(static_cast<int8_t>(x[i + kQK / 2] * inverse + 8.5f)));
      out[b].qs[i] = static_cast<uint8_t>(low | high << 4);
    }
  }
}

namespace {

// Quants 0..31 into a Q5_0 / Q5_1 block: low nibbles as Q4_0's, fifth bits in qh.
template <class Block>
void pack_q5(const int* q, Block& block) {
  uint32_t high = 0;
  for (int i = 0; i < kQK / 2; ++i) {
    block.qs[i] = static_cast<uint8_t>((q[i] & 15) | (q[i + kQK / 2] & 15) << 4);
    high |= (static_cast<uint32_t>(q[i] >> 4) << i) |
            (static_cast<uint32_t>(q[i + kQK / 2] >> 4) << (i + kQK / 2));
  }
  for (int byte = 0; byte < 4; ++byte) block.qh[byte] = static_cast<uint8_t>(high >> (8 * byte));
}

}  // namespace

void quantize_row_q5_0(const float* x, int64_t k, BlockQ5_0* out) {
  check_blocks("quantize_row_q5_0", k, kQK);
  for (int64_t b = 0; b < k / kQK; ++b, x += kQK) {
    const float d = signed_max(x, kQK) / -16.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    int q[kQK];
    for (int i = 0; i < kQK; ++i)
      q[i] = std::min(31, static_cast<int>(static_cast<int8_t>(x[i] * inverse + 16.5f)));
    out[b].d = f32_to_f16(d);
    pack_q5(q, out[b]);
  }
}

void quantize_row_q5_1(const float* x, int64_t k, BlockQ5_1* out) {
  check_blocks("quantize_row_q5_1", k, kQK);
  for (int64_t b = 0; b < k / kQK; ++b, x += kQK) {
    float min = x[0], max = x[0];
    for (int i = 1; i < kQK; ++i) {
      min = std::min(min, x[i]);
      max = std::max(max, x[i]);
    }
    const float d = (max - min) / 31.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    int q[kQK];
    for (int i = 0; i < kQK; ++i)
      q[i] = std::min(31, static_cast<int>(static_cast<uint8_t>((x[i] - min) * inverse + 0.5f)));
    out[b].d = f32_to_f16(d);
    out[b].m = f32_to_f16(min);
    pack_q5(q, out[b]);
  }
}

// ---- K-quant weights: llama.cpp's reference arithmetic, operation for
// operation (the order of every f32 operation is ggml-quants.c's, never
// contracted), so the blocks are byte for byte those of its reference
// built without contraction (compared on 3000 varied rows of 1024,
// 2026-12-06). A llama.cpp built with FMA contraction (GCC's default under
// -march=native) rounds some candidate fits differently and so writes
// other, equally valid blocks in some rows; its dequantization is the same.

namespace {

// Round to nearest, ties to even, as ggml's nearest_int (|v| < 2^22 here:
// every argument is a value over a step no smaller than the value's block
// allows).
int nearest(float v) {
  return static_cast<int>(std::lrintf(v));
}

// Levels L in [0, nmax] with x ~= scale * L - min_out (min_out >= 0): the
// first guess spans [min(x, 0), max(x)]; then nstep + 1 step sizes
// (nmax + rmin + rdelta * i levels over the span) each get a weighted least
// squares scale and offset, and the one of smallest weighted squared error
// is kept (ggml's make_qkx2_quants, squared error).
float fit_scale_and_min(int n, int nmax, const float* x, const float* w, uint8_t* levels,
                        float& min_out, float rmin, float rdelta, int nstep) {
  float min = x[0], max = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(levels, levels + n, uint8_t{0});
    min_out = -min;
    return 0.0f;
  }
  float inverse = static_cast<float>(nmax) / (max - min);
  float scale = 1.0f / inverse;
  float best_error = 0.0f;
  for (int i = 0; i < n; ++i) {
    levels[i] = static_cast<uint8_t>(std::clamp(nearest(inverse * (x[i] - min)), 0, nmax));
    const float diff = scale * levels[i] + min - x[i];
    best_error += w[i] * (diff * diff);
  }
  uint8_t trial[32];
  for (int step = 0; step <= nstep; ++step) {
    inverse = (rmin + rdelta * static_cast<float>(step) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest(inverse * (x[i] - min)), 0, nmax);
      trial[i] = static_cast<uint8_t>(l);
      const float fl = static_cast<float>(l);
      sum_l += w[i] * fl;
      sum_l2 += w[i] * fl * fl;
      sum_xl += w[i] * fl * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0)) continue;  // NaN too, as ggml skips it
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    float error = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float diff = this_scale * trial[i] + this_min - x[i];
      error += w[i] * (diff * diff);
    }
    if (error < best_error) {
      std::copy(trial, trial + n, levels);
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  min_out = -min;
  return scale;
}

// Q4_K and Q5_K: 8 sub-blocks' 6-bit scales and mins (blocks.hpp's packing)
// and the per-value levels 0..nmax, before the nibbles are packed.
template <class Block>
void quantize_k_scales(const float* x, int nmax, float rmin, int nstep, Block& block,
                       uint8_t* levels) {
  float scales[8], mins[8], weights[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float average = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = average + std::fabs(xs[l]);
    scales[j] =
        fit_scale_and_min(32, nmax, xs, weights, levels + 32 * j, mins[j], rmin, 0.1f, nstep);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inverse_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inverse_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  std::memset(block.scales, 0, sizeof(block.scales));
  for (int j = 0; j < 8; ++j) {
    // ggml stores the rounded value in a uint8_t before capping it at 63.
    const uint8_t ls =
        std::min<uint8_t>(63, static_cast<uint8_t>(nearest(inverse_scale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest(inverse_min * mins[j])));
    if (j < 4) {
      block.scales[j] = ls;
      block.scales[j + 4] = lm;
    } else {
      block.scales[j + 4] = static_cast<uint8_t>((ls & 0xf) | (lm & 0xf) << 4);
      block.scales[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      block.scales[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  block.d = f32_to_f16(max_scale / 63.0f);
  block.dmin = f32_to_f16(max_min / 63.0f);
  // Every value again, against the scale and min as stored.
  for (int j = 0; j < 8; ++j) {
    int sc = 0, m = 0;
    k_scale_min(block.scales, j, sc, m);
    const float d = f16_to_f32(block.d) * static_cast<float>(sc);
    if (d == 0.0f) continue;  // keeps the fit's levels, as ggml does
    const float dm = f16_to_f32(block.dmin) * static_cast<float>(m);
    for (int l = 0; l < 32; ++l)
      levels[32 * j + l] =
          static_cast<uint8_t>(std::clamp(nearest((x[32 * j + l] + dm) / d), 0, nmax));
  }
}

// Signed levels -nmax..nmax-1 (stored + nmax) with x ~= scale * level,
// weights x^2: nmax over max|x| first, then 18 nearby step sizes, keeping
// the best weighted fit (ggml's make_qx_quants, rmse_type 1).
float fit_signed_scale(int n, int nmax, const float* x, int8_t* levels) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  if (amax < 1e-15f) {
    std::fill(levels, levels + n, int8_t{0});
    return 0.0f;
  }
  const auto level = [&](float inverse, int i) {
    return std::clamp(nearest(inverse * x[i]), -nmax, nmax - 1);
  };
  const auto sums = [&](float inverse, float& sum_lx, float& sum_l2) {
    sum_lx = sum_l2 = 0;
    for (int i = 0; i < n; ++i) {
      const auto l = static_cast<float>(level(inverse, i));
      const float w = x[i] * x[i];
      sum_lx += w * x[i] * l;
      sum_l2 += w * l * l;
    }
  };
  float inverse = static_cast<float>(-nmax) / max;
  float sum_lx, sum_l2;
  sums(inverse, sum_lx, sum_l2);
  for (int i = 0; i < n; ++i) levels[i] = static_cast<int8_t>(level(inverse, i) + nmax);
  float scale = sum_l2 != 0 ? sum_lx / sum_l2 : 0.0f;
  float best = scale * sum_lx;
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    inverse = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / max;
    sums(inverse, sum_lx, sum_l2);
    if (sum_l2 > 0 && sum_lx * sum_lx > best * sum_l2) {
      for (int i = 0; i < n; ++i) levels[i] = static_cast<int8_t>(level(inverse, i) + nmax);
      scale = sum_lx / sum_l2;
      best = scale * sum_lx;
    }
  }
  return scale;
}

}  // namespace

void quantize_row_q4_k(const float* x, int64_t k, BlockQ4_K* out) {
  check_blocks("quantize_row_q4_k", k, kQKK);
  uint8_t levels[kQKK];
  for (int64_t b = 0; b < k / kQKK; ++b, x += kQKK) {
    quantize_k_scales(x, 15, -1.0f, 20, out[b], levels);
    // Bytes 32c..32c+31: sub-block 2c in the low nibbles, 2c+1 in the high.
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l)
        out[b].qs[32 * c + l] =
            static_cast<uint8_t>(levels[64 * c + l] | levels[64 * c + 32 + l] << 4);
  }
}

void quantize_row_q5_k(const float* x, int64_t k, BlockQ5_K* out) {
  check_blocks("quantize_row_q5_k", k, kQKK);
  uint8_t levels[kQKK];
  for (int64_t b = 0; b < k / kQKK; ++b, x += kQKK) {
    quantize_k_scales(x, 31, -0.5f, 15, out[b], levels);
    std::memset(out[b].qh, 0, sizeof(out[b].qh));
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) {
        const int low = levels[64 * c + l], high = levels[64 * c + 32 + l];
        // The fifth bit of sub-block s's element l is bit s of qh[l].
        out[b].qh[l] |= static_cast<uint8_t>((low >> 4) << (2 * c) | (high >> 4) << (2 * c + 1));
        out[b].qs[32 * c + l] = static_cast<uint8_t>((low & 0xf) | (high & 0xf) << 4);
      }
  }
}

void quantize_row_q6_k(const float* x, int64_t k, BlockQ6_K* out) {
  check_blocks("quantize_row_q6_k", k, kQKK);
  int8_t levels[kQKK];
  for (int64_t b = 0; b < k / kQKK; ++b, x += kQKK) {
    BlockQ6_K& block = out[b];
    float scales[16];
    float max_scale = 0, max_abs_scale = 0;
    for (int s = 0; s < 16; ++s) {
      scales[s] = fit_signed_scale(16, 32, x + 16 * s, levels + 16 * s);
      if (std::fabs(scales[s]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[s]);
        max_scale = scales[s];
      }
    }
    if (max_abs_scale < 1e-15f) {
      std::memset(&block, 0, sizeof(block));
      continue;
    }
    const float inverse = -128.0f / max_scale;
    block.d = f32_to_f16(1.0f / inverse);
    for (int s = 0; s < 16; ++s)
      block.scales[s] = static_cast<int8_t>(std::min(127, nearest(inverse * scales[s])));
    for (int s = 0; s < 16; ++s) {
      const float d = f16_to_f32(block.d) * static_cast<float>(block.scales[s]);
      if (d == 0.0f) continue;  // keeps the fit's levels, as ggml does
      for (int l = 0; l < 16; ++l)
        levels[16 * s + l] =
            static_cast<int8_t>(std::clamp(nearest(x[16 * s + l] / d), -32, 31) + 32);
    }
    // blocks.hpp's layout: per half h, element 32k + l in ql[64h + 32(k & 1) + l]
    // (high nibble for k >= 2) and bits 2k, 2k+1 of qh[32h + l].
    for (int h = 0; h < 2; ++h)
      for (int l = 0; l < 32; ++l) {
        const int8_t* q = levels + 128 * h + l;
        block.ql[64 * h + l] = static_cast<uint8_t>((q[0] & 0xf) | (q[64] & 0xf) << 4);
        block.ql[64 * h + 32 + l] = static_cast<uint8_t>((q[32] & 0xf) | (q[96] & 0xf) << 4);
        block.qh[32 * h + l] = static_cast<uint8_t>((q[0] >> 4) | (q[32] >> 4) << 2 |
                                                    (q[64] >> 4) << 4 | (q[96] >> 4) << 6);
      }
  }
}

}  // namespace hive
