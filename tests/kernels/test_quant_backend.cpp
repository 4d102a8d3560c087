// Quantized weights through the Backend: a Tensor of dtype q8_0 .. q6_k
// (a GGUF's blocks, [n, k]) given to CpuBackend::matmul, matmul_group and
// embedding. On every CPU kernel path, in both matmul precisions and on 1
// or 2 threads, each output equals quant_matmul_reference's bit for bit
// (plus the bias in one f32 addition), alone or in any group. Seeded random
// inputs, the seed printed on failure (HIVE_TEST_SEED replays it).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/thread_pool.hpp"
#include "kernels/quant/dequantize.hpp"
#include "kernels/quant/quant_matmul.hpp"
#include "tests/common/cpu_settings.hpp"
#include "tests/common/random.hpp"
#include "tests/kernels/quant_test_data.hpp"

namespace hive {
namespace {

Tensor weight_tensor(test::QuantWeights& w) {
  return Tensor::view(w.bytes.data(), ggml_dtype(w.type), {w.n, w.k});
}

// quant_matmul_reference's out[:m] for x[:m], plus the bias when given.
std::vector<float> expected(const std::vector<float>& x, const test::QuantWeights& w, int64_t m,
                            const std::vector<float>* bias = nullptr) {
  std::vector<float> out(static_cast<size_t>(m * w.n));
  quant_matmul_reference({x.data(), w.bytes.data(), w.type, out.data(), m, w.k, w.n});
  if (bias)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < w.n; ++j)
        out[static_cast<size_t>(i * w.n + j)] += (*bias)[static_cast<size_t>(j)];
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// Every kernel path, both matmul precisions, 1 and 2 threads.
template <class Check>
void on_every_setting(const Check& check) {
  for (const cpu::CpuPath path : cpu::supported_cpu_paths()) {
    cpu::set_cpu_kernel_path(path);
    for (const auto precision : {cpu::MatmulPrecision::f32, cpu::MatmulPrecision::bf16}) {
      cpu::set_matmul_precision(precision);
      for (const int threads : {1, 2}) {
        cpu::set_cpu_threads(threads);
        SCOPED_TRACE(std::string(cpu::cpu_path_name(path)) + " path (" +
                     std::string(quant_matmul_kernel_name()) + " kernel), " +
                     std::string(cpu::matmul_precision_name(precision)) + ", " +
                     std::to_string(threads) + " threads");
        check();
      }
    }
  }
}

class QuantBackendTest : public ::testing::TestWithParam<GgmlType> {
 protected:
  test::KeptCpuSettings kept_;
  std::mt19937_64 rng_{test::test_seed() + static_cast<uint64_t>(GetParam())};
  std::string seed_ = "seed " + std::to_string(test::test_seed());
  int64_t block_ = ggml_type_info(GetParam()).block_size;
  CpuBackend cpu_;
};

TEST_P(QuantBackendTest, MatmulEqualsTheReferenceBitForBit) {
  SCOPED_TRACE(seed_);
  // Enough work at m = 67 (m n k >= 2^18) that 2 threads split it.
  const int64_t k = 4 * std::max<int64_t>(block_, 256), n = 37;
  test::QuantWeights w = test::random_quant_weights(rng_, GetParam(), n, k);
  const std::vector<float> bias = test::random_floats(rng_, static_cast<size_t>(n));
  const Tensor bias_tensor = Tensor::view(const_cast<float*>(bias.data()), DType::f32, {n});
  for (const int64_t m : {1, 5, 67}) {
    SCOPED_TRACE("m " + std::to_string(m));
    const std::vector<float> x = test::random_floats(rng_, static_cast<size_t>(m * k));
    const std::vector<float> want = expected(x, w, m), want_biased = expected(x, w, m, &bias);
    on_every_setting([&] {
      std::vector<float> out(want.size(), -1.0f), biased(want.size(), -1.0f);
      const Tensor xt = Tensor::view(const_cast<float*>(x.data()), DType::f32, {m, k});
      cpu_.matmul(xt, weight_tensor(w), nullptr, Tensor::view(out.data(), DType::f32, {m, n}));
      cpu_.matmul(xt, weight_tensor(w), &bias_tensor,
                  Tensor::view(biased.data(), DType::f32, {m, n}));
      EXPECT_TRUE(same_bits(out, want));
      EXPECT_TRUE(same_bits(biased, want_biased));
    });
  }
}

TEST_P(QuantBackendTest, EmbeddingDequantizesTheRows) {
  SCOPED_TRACE(seed_);
  const int64_t vocab = 9, dim = 2 * block_;
  test::QuantWeights table = test::random_quant_weights(rng_, GetParam(), vocab, dim);
  const std::vector<int32_t> ids = {3, 0, 8, 3};
  std::vector<float> out(ids.size() * static_cast<size_t>(dim));
  cpu_.embedding(weight_tensor(table),
                 Tensor::view(const_cast<int32_t*>(ids.data()), DType::i32, {4}),
                 Tensor::view(out.data(), DType::f32, {4, dim}));
  const int64_t row_bytes = dtype_bytes(ggml_dtype(GetParam()), dim);
  for (size_t i = 0; i < ids.size(); ++i) {
    std::vector<float> row(static_cast<size_t>(dim));
    dequantize_to_f32(GetParam(), table.bytes.data() + ids[i] * row_bytes, dim, row.data());
    EXPECT_EQ(0, std::memcmp(row.data(), out.data() + i * static_cast<size_t>(dim), row.size() * 4))
        << "row " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, QuantBackendTest, ::testing::ValuesIn(test::kQuantMatmulTypes),
                         [](const auto& type) { return test::type_name(type.param); });

// A group as the model makes them: q, k, v of one x in a Q4_K_M-like mix
// (Q4_K, Q4_K, Q6_K), two experts' Q8_0 products of their own x, a bf16
// product among them, and a projection with a bias. Each output is what it
// gets alone: the reference's for quantized w, cpu matmul's for bf16.
TEST(QuantBackend, AGroupGivesEveryProductItsLoneBits) {
  const test::KeptCpuSettings kept;
  std::mt19937_64 rng(test::test_seed());
  SCOPED_TRACE("seed " + std::to_string(test::test_seed()));
  CpuBackend cpu;
  const int64_t k = 512, m = 7;
  std::vector<test::QuantWeights> w = {test::random_quant_weights(rng, GgmlType::q4_k, 64, k),
                                       test::random_quant_weights(rng, GgmlType::q4_k, 32, k),
                                       test::random_quant_weights(rng, GgmlType::q6_k, 32, k),
                                       test::random_quant_weights(rng, GgmlType::q8_0, 48, k),
                                       test::random_quant_weights(rng, GgmlType::q8_0, 48, k)};
  const std::vector<float> x = test::random_floats(rng, static_cast<size_t>(m * k));
  const std::vector<float> expert_x = test::random_floats(rng, static_cast<size_t>(3 * k));
  const std::vector<float> bias = test::random_floats(rng, 32);
  std::vector<uint16_t> bf16_w(static_cast<size_t>(16 * k));
  for (uint16_t& v : bf16_w) v = f32_to_bf16(test::random_floats(rng, 1)[0]);
  const auto view = [](const std::vector<float>& v, int64_t rows, int64_t cols) {
    return Tensor::view(const_cast<float*>(v.data()), DType::f32, {rows, cols});
  };
  const Tensor bias_tensor = view(bias, 1, 32).reshape({32});
  const Tensor bf16_tensor = Tensor::view(bf16_w.data(), DType::bf16, {16, k});
  // Problem i: x rows, weight, bias.
  struct Spec {
    const std::vector<float>* x;
    int64_t rows;
    Tensor w;
    const Tensor* bias;
  };
  const std::vector<Spec> specs = {
      {&x, m, weight_tensor(w[0]), nullptr},        {&x, m, weight_tensor(w[1]), &bias_tensor},
      {&x, m, weight_tensor(w[2]), nullptr},        {&x, m, bf16_tensor, nullptr},
      {&expert_x, 1, weight_tensor(w[3]), nullptr}, {&expert_x, 3, weight_tensor(w[4]), nullptr}};
  on_every_setting([&] {
    std::vector<std::vector<float>> lone, grouped;
    std::vector<MatmulProblem> group;
    for (const Spec& s : specs) {
      const int64_t n = s.w.shape[0];
      lone.emplace_back(static_cast<size_t>(s.rows * n), -1.0f);
      grouped.emplace_back(static_cast<size_t>(s.rows * n), -2.0f);
      cpu.matmul(view(*s.x, s.rows, k), s.w, s.bias, view(lone.back(), s.rows, n));
    }
    for (size_t i = 0; i < specs.size(); ++i)
      group.push_back({view(*specs[i].x, specs[i].rows, k), specs[i].w, specs[i].bias,
                       view(grouped[i], specs[i].rows, specs[i].w.shape[0])});
    cpu.matmul_group(group);
    for (size_t i = 0; i < specs.size(); ++i) EXPECT_TRUE(same_bits(grouped[i], lone[i])) << i;
    // The lone quantized products are the reference's.
    for (size_t i : {0, 2}) EXPECT_TRUE(same_bits(lone[i], expected(x, w[i], m))) << i;
    EXPECT_TRUE(same_bits(lone[1], expected(x, w[1], m, &bias)));
    EXPECT_TRUE(same_bits(lone[5], expected(expert_x, w[4], 3)));
  });
}

TEST(QuantBackend, ATensorsRowsAreWholeBlocks) {
  std::vector<uint8_t> bytes(4 * 144);
  const Tensor w = Tensor::view(bytes.data(), DType::q4_k, {4, 256});
  EXPECT_EQ(w.nbytes(), 4u * 144u);
  EXPECT_EQ(static_cast<uint8_t*>(w.rows(3, 1).data), bytes.data() + 3 * 144);
  EXPECT_EQ(w.reshape({2, 512}).nbytes(), 4u * 144u);
  try {
    Tensor::view(bytes.data(), DType::q4_k, {8, 128});
    FAIL() << "a Q4_K row of 128 elements was taken";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "a q4_k tensor's rows must be whole blocks of 256 elements (got [8, 128] q4_k)");
  }
}

TEST(QuantBackend, AFloatOnlyOpNamesTheDtype) {
  std::vector<uint8_t> bytes(34);
  const Tensor w = Tensor::view(bytes.data(), DType::q8_0, {32});
  std::vector<float> x(32, 1.0f);
  CpuBackend cpu;
  try {
    cpu.rms_norm(Tensor::view(x.data(), DType::f32, {1, 32}), w, 1e-6f,
                 Tensor::view(x.data(), DType::f32, {1, 32}));
    FAIL() << "rms_norm took a Q8_0 weight";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[32] q8_0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hive
