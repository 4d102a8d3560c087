// FP8 checkpoints' weights through cpu::matmul: f8_e4m3 [n, k] with f32
// scales per 128 x 128 block (Tensor::block_scales). Each output must have
// exactly the bits the same path gives the f32 weights dequantized by
// f8_e4m3_row_to_f32 (the AVX-512 kernel widens and scales as it loads; the
// scalar and AVX2 paths run the reference, which dequantizes a row at a
// time): on every path and precision, on 1 or 2 threads, a row alone or in
// any batch, a product alone or in a group. Every non-NaN byte value
// occurs; partial blocks at both edges. Seeded random inputs (seed printed;
// HIVE_TEST_SEED replays it).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/thread_pool.hpp"
#include "tests/common/cpu_settings.hpp"
#include "tests/common/random.hpp"

namespace hive::cpu {
namespace {

struct Fp8Weights {
  int64_t n, k;
  std::vector<uint8_t> bytes;
  std::vector<float> scales;       // [ceil(n / 128), ceil(k / 128)]
  std::vector<float> dequantized;  // [n, k], f8_e4m3_row_to_f32's

  Tensor tensor() {
    Tensor t = Tensor::view(bytes.data(), DType::f8_e4m3, {n, k});
    t.block_scales = scales.data();
    return t;
  }
  Tensor f32() { return Tensor::view(dequantized.data(), DType::f32, {n, k}); }
};

// Random bytes that pass through every value but the two NaNs, and block
// scales of varied magnitude (as weight_scale_inv: max |w| / 448).
Fp8Weights random_fp8(std::mt19937_64& rng, int64_t n, int64_t k) {
  Fp8Weights w{n, k, {}, {}, {}};
  w.bytes.resize(static_cast<size_t>(n * k));
  std::uniform_int_distribution<int> byte(0, 255);
  for (size_t i = 0; i < w.bytes.size(); ++i) {
    uint8_t b = i < 256 ? static_cast<uint8_t>(i) : static_cast<uint8_t>(byte(rng));
    if ((b & 0x7f) == 0x7f) b ^= 1;  // NaN -> 448
    w.bytes[i] = b;
  }
  const int64_t scale_cols = (k + kFp8Block - 1) / kFp8Block;
  std::uniform_real_distribution<float> exponent(-12.0f, -2.0f);
  w.scales.resize(static_cast<size_t>((n + kFp8Block - 1) / kFp8Block * scale_cols));
  for (float& s : w.scales) s = std::exp2(exponent(rng)) * 1.37f;
  w.dequantized.resize(static_cast<size_t>(n * k));
  for (int64_t r = 0; r < n; ++r)
    f8_e4m3_row_to_f32(w.bytes.data() + r * k, w.scales.data() + r / kFp8Block * scale_cols, k,
                       w.dequantized.data() + r * k);
  return w;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

class Fp8Matmul : public ::testing::Test {
 protected:
  test::KeptCpuSettings kept_;
  std::mt19937_64 rng_{test::test_seed()};
  std::string seed_ = "seed " + std::to_string(test::test_seed());
};

TEST_F(Fp8Matmul, GivesTheBitsOfTheDequantizedWeights) {
  SCOPED_TRACE(seed_);
  for (const CpuPath path : supported_cpu_paths()) {
    set_cpu_kernel_path(path);
    for (const auto precision : {MatmulPrecision::f32, MatmulPrecision::bf16}) {
      set_matmul_precision(precision);
      for (const auto& shape :
           {std::pair<int64_t, int64_t>{1, 1}, {17, 16}, {200, 300}, {129, 257}, {256, 128}}) {
        const int64_t n = shape.first, k = shape.second;
        Fp8Weights weights = random_fp8(rng_, n, k);
        auto bias_values = test::random_floats(rng_, static_cast<size_t>(n));
        const Tensor bias = Tensor::view(bias_values.data(), DType::f32, {n});
        for (const int64_t m : {1, 3, 7, 33}) {
          SCOPED_TRACE(std::string(cpu_path_name(path)) + " path, " +
                       std::string(matmul_precision_name(precision)) + ", m=" + std::to_string(m) +
                       " n=" + std::to_string(n) + " k=" + std::to_string(k));
          auto x = test::random_floats(rng_, static_cast<size_t>(m * k));
          const Tensor xt = Tensor::view(x.data(), DType::f32, {m, k});
          const auto out_of = [&](std::vector<float>& v) {
            v.assign(static_cast<size_t>(m * n), std::nanf(""));
            return Tensor::view(v.data(), DType::f32, {m, n});
          };
          std::vector<float> expected, one_thread, two_threads;
          // The AVX-512 kernel against itself on f32; below it, the reference.
          if (path >= CpuPath::avx512)
            matmul(xt, weights.f32(), &bias, out_of(expected));
          else
            matmul_reference(xt, weights.f32(), &bias, out_of(expected));
          set_cpu_threads(1);
          matmul(xt, weights.tensor(), &bias, out_of(one_thread));
          set_cpu_threads(2);
          matmul(xt, weights.tensor(), &bias, out_of(two_threads));
          ASSERT_TRUE(same_bits(one_thread, expected));
          ASSERT_TRUE(same_bits(two_threads, expected));
          for (int64_t i = 0; i < m; ++i) {
            std::vector<float> alone;
            matmul(xt.rows(i, 1), weights.tensor(), &bias, [&] {
              alone.assign(static_cast<size_t>(n), 0.0f);
              return Tensor::view(alone.data(), DType::f32, {1, n});
            }());
            ASSERT_EQ(std::memcmp(alone.data(), expected.data() + i * n, n * 4), 0)
                << "row " << i << " alone differs from the batch";
          }
          // In a group beside a float product of the same x.
          std::vector<float> grouped, beside;
          const MatmulProblem group[] = {{xt, weights.tensor(), &bias, out_of(grouped)},
                                         {xt, weights.f32(), nullptr, out_of(beside)}};
          matmul_group(group);
          ASSERT_TRUE(same_bits(grouped, expected));
        }
      }
    }
  }
}

TEST_F(Fp8Matmul, ANanWeightGivesNan) {
  SCOPED_TRACE(seed_);
  Fp8Weights w = random_fp8(rng_, 4, 40);
  w.bytes[1 * 40 + 7] = 0xff;  // row 1's NaN
  for (const CpuPath path : supported_cpu_paths()) {
    set_cpu_kernel_path(path);
    SCOPED_TRACE(std::string(cpu_path_name(path)) + " path");
    auto x = test::random_floats(rng_, 40);
    std::vector<float> out(4);
    matmul(Tensor::view(x.data(), DType::f32, {1, 40}), w.tensor(), nullptr,
           Tensor::view(out.data(), DType::f32, {1, 4}));
    EXPECT_TRUE(std::isnan(out[1]));
    EXPECT_TRUE(std::isfinite(out[0]) && std::isfinite(out[2]) && std::isfinite(out[3]));
  }
}

TEST_F(Fp8Matmul, RowsKeepTheirScalesAndWholeScaleBlocks) {
  SCOPED_TRACE(seed_);
  Fp8Weights w = random_fp8(rng_, 300, 64);
  auto x = test::random_floats(rng_, 64);
  const Tensor xt = Tensor::view(x.data(), DType::f32, {1, 64});
  std::vector<float> all(300), part(100);
  matmul(xt, w.tensor(), nullptr, Tensor::view(all.data(), DType::f32, {1, 300}));
  matmul(xt, w.tensor().rows(128, 100), nullptr, Tensor::view(part.data(), DType::f32, {1, 100}));
  EXPECT_EQ(std::memcmp(part.data(), all.data() + 128, 100 * 4), 0);
  try {
    (void)w.tensor().rows(64, 10);
    ADD_FAILURE() << "a slice inside a scale block was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("split its 128-row scale blocks"), std::string::npos)
        << e.what();
  }
}

TEST_F(Fp8Matmul, AWeightWithoutScalesIsRefused) {
  std::vector<uint8_t> bytes(8, 0x38);
  std::vector<float> x(4, 1.0f), out(2);
  try {
    matmul(Tensor::view(x.data(), DType::f32, {1, 4}),
           Tensor::view(bytes.data(), DType::f8_e4m3, {2, 4}), nullptr,
           Tensor::view(out.data(), DType::f32, {1, 2}));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no block scales"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hive::cpu
