// quant_matmul (kernels/quant/quant_matmul.hpp) on every CPU kernel path
// this machine runs, for every block type: bit for bit the scalar
// reference's outputs, a row's bits the same alone or in a batch and on 1
// or 2 threads, k that is not whole blocks refused, and the Q8_0 family's
// order of quant_matmul.hpp written out once more. Seeded random
// inputs, the seed printed on failure (HIVE_TEST_SEED replays it); outputs
// poisoned before the run and guarded after.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/thread_pool.hpp"
#include "kernels/quant/blocks.hpp"
#include "kernels/quant/dequantize.hpp"
#include "kernels/quant/quant_matmul.hpp"
#include "kernels/quant/quantize.hpp"
#include "tests/common/cpu_settings.hpp"
#include "tests/common/random.hpp"
#include "tests/kernels/quant_test_data.hpp"

namespace hive {
namespace {

constexpr int64_t kGuard = 16;
constexpr uint32_t kPoison = 0x7fc0dead;  // a NaN no kernel produces

std::vector<float> poisoned(int64_t count) {
  std::vector<float> out(static_cast<size_t>(count + 2 * kGuard));
  for (float& v : out) std::memcpy(&v, &kPoison, 4);
  return out;
}

bool same_bits(const float* a, const float* b, int64_t count) {
  return std::memcmp(a, b, static_cast<size_t>(count) * 4) == 0;
}

// out (with its guards) = x[:m] . w^T on the current path.
std::vector<float> run(const std::vector<float>& x, const test::QuantWeights& w, int64_t m,
                       bool reference = false) {
  std::vector<float> out = poisoned(m * w.n);
  const QuantMatmul problem{x.data(), w.bytes.data(), w.type, out.data() + kGuard, m, w.k, w.n};
  if (reference) {
    quant_matmul_reference(problem);
  } else {
    quant_matmul(problem);
  }
  return out;
}

bool guards_intact(const std::vector<float>& out) {
  const auto size = static_cast<int64_t>(out.size());
  for (int64_t i = 0; i < kGuard; ++i) {
    uint32_t head = 0, tail = 0;
    std::memcpy(&head, &out[static_cast<size_t>(i)], 4);
    std::memcpy(&tail, &out[static_cast<size_t>(size - 1 - i)], 4);
    if (head != kPoison || tail != kPoison) return false;
  }
  return true;
}

class QuantMatmulTest : public ::testing::TestWithParam<GgmlType> {
 protected:
  test::KeptCpuSettings kept_;
  std::mt19937_64 rng_{test::test_seed() + static_cast<uint64_t>(GetParam())};
  std::string seed_ = "seed " + std::to_string(test::test_seed());
  int64_t block_ = ggml_type_info(GetParam()).block_size;
};

TEST_P(QuantMatmulTest, EveryPathEqualsTheReferenceBitForBit) {
  SCOPED_TRACE(seed_);
  // Odd and even block counts, rows across a task's row block (64) and
  // whole and partial register tiles (4 rows; 8 for the K-quants on
  // AVX-512), alone and after whole ones in a task (13), columns not a
  // multiple of a task's 16 nor of a tile's 4.
  for (const int64_t blocks : {1, 3, 8}) {
    const int64_t k = blocks * block_, n = 37;
    const test::QuantWeights w = test::random_quant_weights(rng_, GetParam(), n, k);
    for (const int64_t m : {1, 2, 4, 5, 13, 16, 67}) {
      const std::vector<float> x = test::random_floats(rng_, static_cast<size_t>(m * k));
      const std::vector<float> expected = run(x, w, m, /*reference=*/true);
      ASSERT_TRUE(guards_intact(expected));
      for (const cpu::CpuPath path : cpu::supported_cpu_paths()) {
        cpu::set_cpu_kernel_path(path);
        SCOPED_TRACE(std::string(quant_matmul_kernel_name()) + " kernel, m " + std::to_string(m) +
                     ", k " + std::to_string(k));
        const std::vector<float> got = run(x, w, m);
        EXPECT_TRUE(guards_intact(got));
        EXPECT_TRUE(same_bits(got.data(), expected.data(), static_cast<int64_t>(got.size())));
      }
    }
  }
}

TEST_P(QuantMatmulTest, ARowsBitsDependOnNeitherTheBatchNorTheThreads) {
  SCOPED_TRACE(seed_);
  // Enough work (m n k >= 2^18) that 2 threads split it.
  const int64_t k = 4 * std::max<int64_t>(block_, 256), n = 160, max_m = 64;
  const test::QuantWeights w = test::random_quant_weights(rng_, GetParam(), n, k);
  const std::vector<float> x = test::random_floats(rng_, static_cast<size_t>(max_m * k));
  for (const cpu::CpuPath path : cpu::supported_cpu_paths()) {
    cpu::set_cpu_kernel_path(path);
    SCOPED_TRACE(std::string(quant_matmul_kernel_name()) + " kernel");
    cpu::set_cpu_threads(2);
    const std::vector<float> batch = run(x, w, max_m);
    for (const int64_t m : {1, 2, 3, 4, 17, 64}) {
      for (const int threads : {1, 2}) {
        cpu::set_cpu_threads(threads);
        SCOPED_TRACE("m " + std::to_string(m) + ", threads " + std::to_string(threads));
        const std::vector<float> got = run(x, w, m);
        EXPECT_TRUE(guards_intact(got));
        EXPECT_TRUE(same_bits(got.data() + kGuard, batch.data() + kGuard, m * n));
      }
    }
  }
}

TEST_P(QuantMatmulTest, KNotWholeBlocksIsAnError) {
  const int64_t k = block_ + 4, n = 2, m = 1;
  const std::vector<float> x(static_cast<size_t>(k), 1.0f);
  const std::vector<uint8_t> w(static_cast<size_t>(4 * k * n));
  std::vector<float> out(2);
  const std::string expected = "quant_matmul: k = " + std::to_string(k) + " is not a multiple of " +
                               test::type_name(GetParam()) + "'s block size " +
                               std::to_string(block_);
  for (const bool reference : {true, false}) {
    try {
      const QuantMatmul problem{x.data(), w.data(), GetParam(), out.data(), m, k, n};
      reference ? quant_matmul_reference(problem) : quant_matmul(problem);
      ADD_FAILURE() << "no error for k = " << k;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), expected);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, QuantMatmulTest, ::testing::ValuesIn(test::kQuantMatmulTypes),
                         [](const auto& param) { return test::type_name(param.param); });

// Block b of row j as the order reads it: the 32 integer weights, d_w and
// Q5_1's m_w (0 otherwise).
struct OrderBlock {
  int w[kQK];
  float d = 0, m = 0;
};

OrderBlock order_block(const test::QuantWeights& weights, int64_t j, int64_t b) {
  const GgmlTypeInfo info = ggml_type_info(weights.type);
  const uint8_t* p = weights.bytes.data() + (j * weights.k / kQK + b) * info.block_bytes;
  OrderBlock o;
  if (weights.type == GgmlType::q8_0) {
    BlockQ8_0 block;
    std::memcpy(&block, p, sizeof(block));
    for (int e = 0; e < kQK; ++e) o.w[e] = block.qs[e];
    o.d = half_bits_to_f32(block.d);
  } else if (weights.type == GgmlType::q4_0) {
    BlockQ4_0 block;
    std::memcpy(&block, p, sizeof(block));
    for (int e = 0; e < kQK / 2; ++e) {
      o.w[e] = (block.qs[e] & 15) - 8;
      o.w[e + kQK / 2] = (block.qs[e] >> 4) - 8;
    }
    o.d = half_bits_to_f32(block.d);
  } else {
    BlockQ5_1 block;
    std::memcpy(&block, p, sizeof(block));
    for (int e = 0; e < kQK; ++e) o.w[e] = q5_quant(block, e);
    o.d = half_bits_to_f32(block.d);
    o.m = half_bits_to_f32(block.m);
  }
  return o;
}

// Output (i, j) in the header's order (sequential), or in the order before
// it (16 lanes, an fma per group of 4, folded): the second shows that the
// data tells the orders apart.
float order_sum(const test::QuantWeights& weights, const std::vector<BlockQ8_0>& x, int64_t j,
                bool sequential) {
  float s = 0, lanes[16] = {};
  for (int64_t b = 0; b < weights.k / kQK; ++b) {
    const OrderBlock w = order_block(weights, j, b);
    const float d_x = half_bits_to_f32(x[static_cast<size_t>(b)].d);
    int32_t products = 0, x_sum = 0;
    for (int g = 0; g < 8; ++g) {
      int32_t group = 0, group_x = 0;
      for (int t = 0; t < 4; ++t) {
        group += w.w[4 * g + t] * x[static_cast<size_t>(b)].qs[4 * g + t];
        group_x += x[static_cast<size_t>(b)].qs[4 * g + t];
      }
      products += group;
      x_sum += group_x;
      float& lane = lanes[8 * (b % 2) + g];
      lane = std::fma(static_cast<float>(group), w.d * d_x, lane);
      if (w.m != 0) lane = std::fma(static_cast<float>(group_x), w.m * d_x, lane);
    }
    s = std::fma(static_cast<float>(products), w.d * d_x, s);
    if (w.m != 0) s = std::fma(static_cast<float>(x_sum), w.m * d_x, s);
  }
  for (int width = 8; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l) lanes[l] = lanes[l] + lanes[l + width];
  return sequential ? s : lanes[0];
}

TEST(QuantMatmul, TheQ8_0FamilySumsItsBlocksOneAfterAnother) {
  test::KeptCpuSettings kept;
  std::mt19937_64 rng(test::test_seed());
  SCOPED_TRACE("seed " + std::to_string(test::test_seed()));
  // 27 blocks: 8 at a time and 3 alone; m 3 and 9 take the register tiles;
  // 23 columns, a task of 16 and one of 7: decode's 4, 2 and 1 side by side.
  const int64_t k = 27 * kQK, n = 23;
  for (const GgmlType type : {GgmlType::q8_0, GgmlType::q4_0, GgmlType::q5_1}) {
    const test::QuantWeights w = test::random_quant_weights(rng, type, n, k);
    for (const int64_t m : {1, 3, 9}) {
      const std::vector<float> x = test::random_floats(rng, static_cast<size_t>(m * k));
      std::vector<float> expected(static_cast<size_t>(m * n));
      int64_t old_order_differs = 0;
      for (int64_t i = 0; i < m; ++i) {
        std::vector<BlockQ8_0> xq(static_cast<size_t>(k / kQK));
        quantize_row_q8_0(x.data() + i * k, k, xq.data());
        for (int64_t j = 0; j < n; ++j) {
          const float s = order_sum(w, xq, j, /*sequential=*/true);
          expected[static_cast<size_t>(i * n + j)] = s;
          old_order_differs += s != order_sum(w, xq, j, /*sequential=*/false);
        }
      }
      SCOPED_TRACE(test::type_name(type) + ", m " + std::to_string(m));
      ASSERT_GT(old_order_differs, 0);
      EXPECT_TRUE(
          same_bits(run(x, w, m, /*reference=*/true).data() + kGuard, expected.data(), m * n));
      for (const cpu::CpuPath path : cpu::supported_cpu_paths()) {
        cpu::set_cpu_kernel_path(path);
        SCOPED_TRACE(std::string(quant_matmul_kernel_name()) + " kernel");
        EXPECT_TRUE(same_bits(run(x, w, m).data() + kGuard, expected.data(), m * n));
      }
    }
  }
}

TEST(QuantMatmul, RefusesATypeItDoesNotTake) {
  const std::vector<float> x(32, 1.0f), w(64, 1.0f);
  std::vector<float> out(2);
  const QuantMatmul problem{x.data(), w.data(), GgmlType::f32, out.data(), 1, 32, 2};
  EXPECT_THROW(quant_matmul(problem), Error);
  EXPECT_THROW(quant_matmul_reference(problem), Error);
}

}  // namespace
}  // namespace hive
