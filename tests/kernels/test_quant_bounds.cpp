// quant_matmul against the dequantized weights times the unquantized x, in
// double: every output within a bound derived from the activations' int8
// rounding (the error that dominates) plus f32's roundings, for every block
// type and path. And the activation quantizers' own promises.
//
// The bound, per output (i, j), with w_p the dequantized weights:
//   |y - sum_p w_p x_p| <= sum_b e_b sum_{p in b} |w_p|     activations
//                          + (blocks + 8) u T                quantized path's f32
//                          + u sum_p |w_p| |x_p|             dequantization's rounding
// where u = 2^-24, b runs over x's activation blocks and e_b bounds
// |x_p - x^_p| there (derived at activation_error below), and T >= the sum
// of the magnitudes of every term the path adds (|d_w d_a A| and |dmin_w d_a
// B| per block), bounded from each weight block's largest scale and quant.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_features.hpp"
#include "kernels/dtype.hpp"
#include "kernels/quant/dequantize.hpp"
#include "kernels/quant/quant_matmul.hpp"
#include "kernels/quant/quantize.hpp"
#include "tests/common/cpu_settings.hpp"
#include "tests/kernels/quant_test_data.hpp"

namespace hive {
namespace {

constexpr double kUnit = 0x1p-24;

bool k_quant(GgmlType type) {
  return ggml_type_info(type).block_size == kQKK;
}

// Max |x_p - x^_p| over an activation block of x (32 values for Q8_0
// activations, 256 for Q8_K), from the quantizers' arithmetic (quantize.hpp):
//   Q8_0: q = round(fl(x * fl(1 / d))), d = max|x| / 127; fl(x / d) is within
//     127 * 2.01 u < 2^-16 of x / d, so |x - d q| <= d (1/2 + 2^-16); the block
//     stores d as f16, which moves d q by |d - f16(d)| |q| <= 127 |d - f16(d)|.
//   Q8_K: q = rne(fl(s x)), s = fl(-127 / x_max), x^ = fl(1 / s) q; |s x - q| <=
//     1/2 + 127 u, and fl(1 / s) is within u of 1 / s: |x - x^| <= |x^ / q| ...
//     <= |d| (1/2 + 254 u)(1 + u) <= |d| (1/2 + 2^-15).
double activation_error(GgmlType type, const float* x) {
  const int count = k_quant(type) ? kQKK : kQK;
  float amax = 0.0f, max = 0.0f;
  for (int p = 0; p < count; ++p)
    if (std::fabs(x[p]) > amax) {
      amax = std::fabs(x[p]);
      max = x[p];
    }
  if (k_quant(type)) return max == 0.0f ? 0.0 : std::fabs(1.0f / (-127.0f / max)) * (0.5 + 0x1p-15);
  const float d = amax / 127.0f;
  return d * (0.5 + 0x1p-16) + 127.0 * std::fabs(d - f16_to_f32(f32_to_f16(d)));
}

// An upper bound on |d_w * scale * q| + |dmin_w * min| for every element of a
// weight block, from its header: the largest scale, quant and min the format
// allows.
double block_term_bound(GgmlType type, const uint8_t* block) {
  uint16_t d = 0, dmin = 0;
  switch (type) {
    case GgmlType::q8_0:
    case GgmlType::q4_0:
      std::memcpy(&d, block, 2);
      return std::fabs(f16_to_f32(d)) * 128;
    case GgmlType::q6_k:
      std::memcpy(&d, block + offsetof(BlockQ6_K, d), 2);
      return std::fabs(f16_to_f32(d)) * 128 * 32;
    case GgmlType::q5_0:
      std::memcpy(&d, block, 2);
      return std::fabs(f16_to_f32(d)) * 16;
    case GgmlType::q5_1:  // d * q + m, q to 31
      std::memcpy(&d, block, 2);
      std::memcpy(&dmin, block + 2, 2);
      return std::fabs(f16_to_f32(d)) * 31 + std::fabs(f16_to_f32(dmin));
    default:  // Q4_K (quants to 15), Q5_K (to 31); 6-bit scales and mins
      std::memcpy(&d, block, 2);
      std::memcpy(&dmin, block + 2, 2);
      return std::fabs(f16_to_f32(d)) * 63 * (type == GgmlType::q4_k ? 15 : 31) +
             std::fabs(f16_to_f32(dmin)) * 63;
  }
}

class QuantBoundTest : public ::testing::TestWithParam<GgmlType> {
 protected:
  test::KeptCpuSettings kept_;
  std::mt19937_64 rng_{test::test_seed() + 100 + static_cast<uint64_t>(GetParam())};
};

TEST_P(QuantBoundTest, WithinTheActivationRoundingBoundOfTheDequantizedProduct) {
  SCOPED_TRACE("seed " + std::to_string(test::test_seed()));
  const GgmlType type = GetParam();
  const GgmlTypeInfo info = ggml_type_info(type);
  const int64_t m = 5, n = 24, k = 1024;
  const int64_t row_blocks = k / info.block_size;
  const int activation_block = k_quant(type) ? kQKK : kQK;
  const test::QuantWeights w = test::random_quant_weights(rng_, type, n, k);
  const std::vector<float> x = test::random_floats(rng_, static_cast<size_t>(m * k));
  std::vector<float> w_f32(static_cast<size_t>(n * k));
  dequantize_to_f32(type, w.bytes.data(), n * k, w_f32.data());
  std::vector<double> error(static_cast<size_t>(m * k / activation_block));
  for (size_t b = 0; b < error.size(); ++b)
    error[b] = activation_error(type, x.data() + static_cast<int64_t>(b) * activation_block);
  for (const cpu::CpuPath path : cpu::supported_cpu_paths()) {
    cpu::set_cpu_kernel_path(path);
    SCOPED_TRACE(std::string(quant_matmul_kernel_name()) + " kernel");
    std::vector<float> out(static_cast<size_t>(m * n));
    quant_matmul({x.data(), w.bytes.data(), type, out.data(), m, k, n});
    double worst = 0;  // the largest error / bound
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double exact = 0, activations = 0, terms = 0, magnitude = 0;
        for (int64_t p = 0; p < k; ++p) {
          const double wp = w_f32[static_cast<size_t>(j * k + p)],
                       xp = x[static_cast<size_t>(i * k + p)];
          const double e = error[static_cast<size_t>((i * k + p) / activation_block)];
          const uint8_t* block =
              w.bytes.data() + (j * row_blocks + p / info.block_size) * info.block_bytes;
          exact += wp * xp;
          activations += e * std::fabs(wp);
          terms += block_term_bound(type, block) * (std::fabs(xp) + e);
          magnitude += std::fabs(wp) * std::fabs(xp);
        }
        const double bound = activations * (1 + 0x1p-20) +
                             static_cast<double>(row_blocks + 8) * kUnit * terms +
                             kUnit * magnitude;
        const double got = out[static_cast<size_t>(i * n + j)];
        ASSERT_LE(std::fabs(got - exact), bound) << "output (" << i << ", " << j << ")";
        worst = std::max(worst, std::fabs(got - exact) / bound);
      }
    RecordProperty("worst_error_over_bound_" + std::string(quant_matmul_kernel_name()),
                   std::to_string(worst));
  }
}

INSTANTIATE_TEST_SUITE_P(Types, QuantBoundTest, ::testing::ValuesIn(test::kQuantMatmulTypes),
                         [](const auto& param) { return test::type_name(param.param); });

TEST(QuantizeActivations, Q8KNeverHoldsMinus128AndItsSumsAreExact) {
  std::mt19937_64 rng(test::test_seed());
  SCOPED_TRACE("seed " + std::to_string(test::test_seed()));
  std::vector<float> x = test::random_floats(rng, 2 * kQKK);
  x[7] = -50.0f;  // the extreme maps to -127 whatever its sign
  std::vector<BlockQ8_K> blocks(2);
  quantize_row_q8_k(x.data(), 2 * kQKK, blocks.data());
  EXPECT_EQ(blocks[0].qs[7], -127);
  for (const BlockQ8_K& block : blocks) {
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) {
        EXPECT_GE(block.qs[16 * g + l], -127);
        sum += block.qs[16 * g + l];
      }
      EXPECT_EQ(block.bsums[g], sum);
    }
  }
}

TEST(QuantizeActivations, Q8KRoundsHalvesToEven) {
  // The extreme -127 makes the scale 1: each value is its own quant.
  std::vector<float> x(kQKK, 0.0f);
  x[0] = -127.0f;
  const float halves[] = {0.5f, 1.5f, 2.5f, -2.5f, -3.5f, 126.5f, 2.4999998f};
  const int expected[] = {0, 2, 2, -2, -4, 126, 2};
  for (int i = 0; i < 7; ++i) x[static_cast<size_t>(i + 1)] = halves[i];
  std::vector<BlockQ8_K> blocks(1);
  quantize_row_q8_k(x.data(), kQKK, blocks.data());
  EXPECT_EQ(blocks[0].d, 1.0f);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(blocks[0].qs[i + 1], expected[i]) << halves[i];
}

TEST(QuantizeActivations, AllZeroBlocksQuantizeToZero) {
  const std::vector<float> x(kQKK, 0.0f);
  std::vector<BlockQ8_K> k_blocks(1);
  std::vector<BlockQ8_0> blocks(kQKK / kQK);
  quantize_row_q8_k(x.data(), kQKK, k_blocks.data());
  quantize_row_q8_0(x.data(), kQKK, blocks.data());
  EXPECT_EQ(k_blocks[0].d, 0.0f);
  for (int i = 0; i < kQKK; ++i) EXPECT_EQ(k_blocks[0].qs[i], 0);
  for (const BlockQ8_0& block : blocks)
    for (const int8_t q : block.qs) EXPECT_EQ(q, 0);
}

// Rows that reach every branch of the quantizers: random values; ties that
// round away from zero (Q8_0) or to even (Q8_K); the largest magnitude twice
// with both signs (the first one sets Q8_K's sign); a zero block; scales
// that round to f16 subnormals; and values so small that 1 / d overflows.
std::vector<float> quantizer_rows(std::mt19937_64& rng) {
  std::vector<float> x = test::random_floats(rng, 8 * kQKK);
  for (int i = 0; i < kQKK; ++i)  // block 1: max 127, so d = 1 and x * (1 / d) = x
    x[kQKK + i] = i == 0 ? 127.0f : static_cast<float>(i % 64) - 31.5f;
  x[2 * kQKK + 5] = -40.0f;  // block 2: -40 first, then +40
  x[2 * kQKK + 9] = 40.0f;
  std::fill_n(x.begin() + 3 * kQKK, kQKK, 0.0f);                                   // block 3
  for (int i = 0; i < kQKK; ++i) x[4 * kQKK + i] *= 1e-6f;                         // block 4
  for (int i = 0; i < kQKK; ++i) x[5 * kQKK + i] = (i % 3 - 1) * 1e-42f;           // block 5
  for (int i = 0; i < kQKK; ++i) x[6 * kQKK + i] = static_cast<float>(i) * -3e4f;  // block 6
  return x;
}

TEST(QuantizeActivations, EveryPathGivesTheScalarBits) {
  test::KeptCpuSettings kept;
  std::mt19937_64 rng(test::test_seed());
  SCOPED_TRACE("seed " + std::to_string(test::test_seed()));
  const std::vector<float> x = quantizer_rows(rng);
  const int64_t k = static_cast<int64_t>(x.size());
  cpu::set_cpu_kernel_path(cpu::CpuPath::scalar);
  std::vector<BlockQ8_0> q8_0(static_cast<size_t>(k / kQK));
  std::vector<BlockQ8_K> q8_k(static_cast<size_t>(k / kQKK));
  quantize_row_q8_0(x.data(), k, q8_0.data());
  quantize_row_q8_k(x.data(), k, q8_k.data());
  for (const cpu::CpuPath path : cpu::supported_cpu_paths()) {
    cpu::set_cpu_kernel_path(path);
    SCOPED_TRACE(std::string(cpu::cpu_path_name(path)));
    std::vector<BlockQ8_0> got_0(q8_0.size());
    std::vector<BlockQ8_K> got_k(q8_k.size());
    quantize_row_q8_0(x.data(), k, got_0.data());
    quantize_row_q8_k(x.data(), k, got_k.data());
    for (size_t b = 0; b < q8_0.size(); ++b)
      EXPECT_EQ(std::memcmp(&got_0[b], &q8_0[b], sizeof(BlockQ8_0)), 0) << "Q8_0 block " << b;
    for (size_t b = 0; b < q8_k.size(); ++b)
      EXPECT_EQ(std::memcmp(&got_k[b], &q8_k[b], sizeof(BlockQ8_K)), 0) << "Q8_K block " << b;
  }
  // The rows reach what they are there for.
  EXPECT_EQ(q8_0[kQKK / kQK].qs[1], -31);  // -30.5 away from zero
  EXPECT_EQ(q8_k[1].qs[1], 30);            // -30.5 * -1 to even
  EXPECT_EQ(q8_k[2].qs[5], -127);          // -40 came first
  EXPECT_EQ(q8_k[2].qs[9], 127);
}

}  // namespace
}  // namespace hive
