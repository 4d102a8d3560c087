// The CPU reference ops against independent double-precision formulas, on
// random shapes and inputs (seed printed), with all weight dtypes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/thread_pool.hpp"
#include "tests/common/random.hpp"

namespace hive {
namespace {

using test::random_floats;

class CpuOps : public ::testing::Test {
 protected:
  void SetUp() override { rng.seed(test::test_seed()); }
  std::mt19937_64 rng;
  CpuBackend cpu;
};

// Weights stored as `dtype`; `values` is updated to what the storage holds.
struct StoredWeights {
  std::vector<float> f32;
  std::vector<uint16_t> half;
  Tensor tensor(DType dtype, std::initializer_list<int64_t> shape) {
    void* data = dtype == DType::f32 ? static_cast<void*>(f32.data()) : half.data();
    return Tensor::view(data, dtype, shape);
  }
};

StoredWeights store(std::vector<float>& values, DType dtype) {
  StoredWeights w;
  if (dtype == DType::f32) {
    w.f32 = values;
    return w;
  }
  w.half = test::to_half_bits(values, dtype);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = dtype == DType::bf16 ? bf16_to_f32(w.half[i]) : f16_to_f32(w.half[i]);
  return w;
}

// The block cache (cpu_backend.hpp): a freed activation-sized block comes
// back for the next allocation of its size; small and huge blocks, and
// anything past the cap, go back to malloc.
TEST(CpuBackendMemory, FreedActivationBlocksAreReused) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the cache is off under AddressSanitizer";
#else
  CpuBackend backend;
  const size_t size = size_t{3} << 20;
  void* first = backend.allocate(size);
  std::memset(first, 1, size);
  backend.deallocate(first);
  EXPECT_EQ(backend.cached_bytes(), size);
  void* second = backend.allocate(size);
  EXPECT_EQ(second, first);
  EXPECT_EQ(backend.cached_bytes(), 0u);
  void* other = backend.allocate(size + 4096);  // another size: not that block
  EXPECT_NE(other, first);
  backend.deallocate(other);
  backend.deallocate(second);
  EXPECT_EQ(backend.cached_bytes(), 2 * size + 4096);
  void* small = backend.allocate(1024);
  void* huge = backend.allocate(size_t{128} << 20);
  backend.deallocate(small);
  backend.deallocate(huge);
  EXPECT_EQ(backend.cached_bytes(), 2 * size + 4096);
  // The cap: 512 MiB of 40 MiB blocks, all live at once, then all freed.
  std::vector<void*> blocks;
  for (int i = 0; i < 16; ++i) blocks.push_back(backend.allocate(size_t{40} << 20));
  for (void* block : blocks) backend.deallocate(block);
  EXPECT_LE(backend.cached_bytes(), size_t{512} << 20);
  EXPECT_GT(backend.cached_bytes(), size_t{400} << 20);
#endif
}

TEST_F(CpuOps, MatmulAllWeightDtypesWithBias) {
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    for (auto [m, k, n] : {std::tuple{1, 64, 33}, {7, 17, 5}, {16, 128, 96}}) {
      SCOPED_TRACE(testing::Message()
                   << dtype_name(dtype) << " m=" << m << " k=" << k << " n=" << n);
      auto x = random_floats(rng, static_cast<size_t>(m * k));
      auto wv = random_floats(rng, static_cast<size_t>(n * k));
      auto bias = random_floats(rng, static_cast<size_t>(n));
      StoredWeights w = store(wv, dtype);
      std::vector<float> out(static_cast<size_t>(m * n), NAN);
      const Tensor b = Tensor::view(bias.data(), DType::f32, {n});
      cpu.matmul(Tensor::view(x.data(), DType::f32, {m, k}), w.tensor(dtype, {n, k}), &b,
                 Tensor::view(out.data(), DType::f32, {m, n}));
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          double ref = bias[static_cast<size_t>(j)];
          for (int t = 0; t < k; ++t)
            ref += double{x[static_cast<size_t>(i * k + t)]} * wv[static_cast<size_t>(j * k + t)];
          ASSERT_NEAR(out[static_cast<size_t>(i * n + j)], ref, 1e-4 * (1 + std::abs(ref)));
        }
    }
  }
}

// bf16/f16 weights are widened as they are read (few input rows) or
// converted once (many): the same bits either way, so a row's output does
// not depend on how many rows share the call.
TEST_F(CpuOps, HalfWeightsGiveTheSameBitsAloneAndBatched) {
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  for (DType dtype : {DType::bf16, DType::f16}) {
    for (int64_t k : {1, 15, 16, 17, 100, 513}) {
      SCOPED_TRACE(testing::Message() << dtype_name(dtype) << " k=" << k);
      const int64_t m = 9, n = 7;
      auto x = random_floats(rng, static_cast<size_t>(m * k));
      auto wv = random_floats(rng, static_cast<size_t>(n * k));
      StoredWeights w = store(wv, dtype);
      std::vector<float> batched(static_cast<size_t>(m * n));
      cpu.matmul(Tensor::view(x.data(), DType::f32, {m, k}), w.tensor(dtype, {n, k}), nullptr,
                 Tensor::view(batched.data(), DType::f32, {m, n}));
      for (int64_t i = 0; i < m; ++i) {
        std::vector<float> alone(static_cast<size_t>(n));
        cpu.matmul(Tensor::view(x.data() + i * k, DType::f32, {1, k}), w.tensor(dtype, {n, k}),
                   nullptr, Tensor::view(alone.data(), DType::f32, {1, n}));
        EXPECT_EQ(std::memcmp(alone.data(), batched.data() + i * n, alone.size() * sizeof(float)),
                  0)
            << "row " << i;
      }
    }
  }
}

TEST_F(CpuOps, MatmulRejectsMismatchedShapes) {
  std::vector<float> x(12), w(12), out(9);
  EXPECT_THROW(cpu.matmul(Tensor::view(x.data(), DType::f32, {3, 4}),
                          Tensor::view(w.data(), DType::f32, {4, 3}), nullptr,
                          Tensor::view(out.data(), DType::f32, {3, 3})),
               Error);
}

TEST_F(CpuOps, RmsNormMatchesFormula) {
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    const int n = 5, dim = 48;
    auto x = random_floats(rng, n * dim, 3.0f);
    auto wv = random_floats(rng, dim);
    StoredWeights w = store(wv, dtype);
    std::vector<float> out(n * dim);
    cpu.rms_norm(Tensor::view(x.data(), DType::f32, {n, dim}), w.tensor(dtype, {dim}), 1e-6f,
                 Tensor::view(out.data(), DType::f32, {n, dim}));
    for (int i = 0; i < n; ++i) {
      double ss = 0;
      for (int j = 0; j < dim; ++j) ss += double{x[i * dim + j]} * x[i * dim + j];
      const double inv = 1.0 / std::sqrt(ss / dim + 1e-6);
      for (int j = 0; j < dim; ++j)
        ASSERT_NEAR(out[i * dim + j], wv[j] * x[i * dim + j] * inv, 1e-5);
    }
  }
}

TEST_F(CpuOps, RopeRotatesPairsHalfApart) {
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  const int n = 4, heads = 3, head_dim = 8, half = head_dim / 2;
  auto x = random_floats(rng, n * heads * head_dim);
  const auto original = x;
  std::vector<int32_t> positions = {0, 1, 7, 300};
  std::vector<float> inv_freq(half);
  for (int j = 0; j < half; ++j)
    inv_freq[j] = static_cast<float>(std::pow(10000.0, -2.0 * j / head_dim));
  cpu.rope(Tensor::view(x.data(), DType::f32, {n, heads, head_dim}),
           Tensor::view(positions.data(), DType::i32, {n}),
           Tensor::view(inv_freq.data(), DType::f32, {half}));
  for (int i = 0; i < n; ++i)
    for (int h = 0; h < heads; ++h)
      for (int j = 0; j < half; ++j) {
        const double angle = static_cast<double>(positions[i]) * inv_freq[j];
        const float* o = &original[(i * heads + h) * head_dim];
        const float* r = &x[(i * heads + h) * head_dim];
        ASSERT_NEAR(r[j], o[j] * std::cos(angle) - o[j + half] * std::sin(angle), 1e-4);
        ASSERT_NEAR(r[j + half], o[j + half] * std::cos(angle) + o[j] * std::sin(angle), 1e-4);
      }
}

TEST_F(CpuOps, EmbeddingGathersRowsAndRejectsBadIds) {
  for (DType dtype : {DType::f32, DType::bf16}) {
    auto table_values = random_floats(rng, 10 * 4);
    StoredWeights table = store(table_values, dtype);
    std::vector<int32_t> ids = {3, 0, 9, 3};
    std::vector<float> out(16);
    cpu.embedding(table.tensor(dtype, {10, 4}), Tensor::view(ids.data(), DType::i32, {4}),
                  Tensor::view(out.data(), DType::f32, {4, 4}));
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) EXPECT_EQ(out[i * 4 + j], table_values[ids[i] * 4 + j]);
    ids[1] = 10;
    EXPECT_THROW(
        cpu.embedding(table.tensor(dtype, {10, 4}), Tensor::view(ids.data(), DType::i32, {4}),
                      Tensor::view(out.data(), DType::f32, {4, 4})),
        Error);
  }
}

TEST_F(CpuOps, SoftmaxTopkNormalize) {
  std::vector<float> x = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f, 0.5f, 0.5f, 4.0f};
  auto probs = x;
  cpu.softmax(Tensor::view(probs.data(), DType::f32, {2, 4}));
  for (int r = 0; r < 2; ++r) {
    double total = 0;
    for (int j = 0; j < 4; ++j) total += std::exp(double{x[r * 4 + j]});
    for (int j = 0; j < 4; ++j)
      EXPECT_NEAR(probs[r * 4 + j], std::exp(double{x[r * 4 + j]}) / total, 1e-6);
  }
  std::vector<float> values(4);
  std::vector<int32_t> indices(4);
  cpu.topk(Tensor::view(x.data(), DType::f32, {2, 4}), 2,
           Tensor::view(values.data(), DType::f32, {2, 2}),
           Tensor::view(indices.data(), DType::i32, {2, 2}));
  // Row 0 has a tie at 3.0 (ids 1 and 3): the lower id comes first.
  EXPECT_EQ(indices, (std::vector<int32_t>{1, 3, 3, 1}));
  EXPECT_EQ(values, (std::vector<float>{3.0f, 3.0f, 4.0f, 0.5f}));
  cpu.normalize_rows(Tensor::view(values.data(), DType::f32, {2, 2}));
  EXPECT_FLOAT_EQ(values[0], 0.5f);
  EXPECT_FLOAT_EQ(values[2], 4.0f / 4.5f);
}

TEST_F(CpuOps, SiluMulSigmoidAddMulRows) {
  auto gate = random_floats(rng, 12), up = random_floats(rng, 12);
  std::vector<float> out(12);
  cpu.silu_mul(Tensor::view(gate.data(), DType::f32, {3, 4}),
               Tensor::view(up.data(), DType::f32, {3, 4}),
               Tensor::view(out.data(), DType::f32, {3, 4}));
  for (int i = 0; i < 12; ++i)
    EXPECT_NEAR(out[i], gate[i] / (1 + std::exp(-double{gate[i]})) * up[i], 1e-6);
  auto s = gate;
  cpu.sigmoid(Tensor::view(s.data(), DType::f32, {12}));
  for (int i = 0; i < 12; ++i) EXPECT_NEAR(s[i], 1 / (1 + std::exp(-double{gate[i]})), 1e-6);
  std::vector<float> scale = {2.0f, 0.0f, -1.0f};
  auto rows = up;
  cpu.mul_rows(Tensor::view(rows.data(), DType::f32, {3, 4}),
               Tensor::view(scale.data(), DType::f32, {3}));
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(rows[i], up[i] * scale[i / 4]);
  cpu.add(Tensor::view(gate.data(), DType::f32, {12}), Tensor::view(up.data(), DType::f32, {12}),
          Tensor::view(out.data(), DType::f32, {12}));
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(out[i], gate[i] + up[i]);
}

TEST_F(CpuOps, GatherAndScatterAddRows) {
  auto src = random_floats(rng, 5 * 3);
  std::vector<int32_t> index = {4, 0, 4};
  std::vector<float> gathered(9);
  cpu.gather_rows(Tensor::view(src.data(), DType::f32, {5, 3}),
                  Tensor::view(index.data(), DType::i32, {3}),
                  Tensor::view(gathered.data(), DType::f32, {3, 3}));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(gathered[i * 3 + j], src[index[i] * 3 + j]);
  std::vector<float> weight = {0.5f, 2.0f, 0.25f};
  std::vector<float> out(15, 1.0f);
  cpu.scatter_add_rows(Tensor::view(gathered.data(), DType::f32, {3, 3}),
                       Tensor::view(index.data(), DType::i32, {3}),
                       Tensor::view(weight.data(), DType::f32, {3}),
                       Tensor::view(out.data(), DType::f32, {5, 3}));
  for (int j = 0; j < 3; ++j) {
    EXPECT_FLOAT_EQ(out[4 * 3 + j], 1 + 0.5f * src[4 * 3 + j] + 0.25f * src[4 * 3 + j]);
    EXPECT_FLOAT_EQ(out[0 * 3 + j], 1 + 2.0f * src[j]);
    EXPECT_FLOAT_EQ(out[2 * 3 + j], 1.0f);
  }
}

// Attention against a direct double-precision evaluation, over GQA ratios,
// chunk positions and sliding windows.
TEST_F(CpuOps, AttentionCausalGqaSlidingWindow) {
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  struct Case {
    int heads, kv_heads, head_dim, start, tokens, window;
  };
  for (const Case c : {Case{4, 4, 8, 0, 5, 0}, Case{8, 2, 16, 3, 4, 0}, Case{6, 1, 8, 10, 1, 0},
                       Case{4, 2, 8, 6, 6, 4}, Case{2, 1, 4, 0, 17, 16}}) {
    SCOPED_TRACE(testing::Message() << "heads " << c.heads << " kv " << c.kv_heads << " start "
                                    << c.start << " tokens " << c.tokens << " window " << c.window);
    const int ctx = c.start + c.tokens, capacity = ctx + 3;
    auto q = random_floats(rng, static_cast<size_t>(c.tokens * c.heads * c.head_dim));
    auto k = random_floats(rng, static_cast<size_t>(capacity * c.kv_heads * c.head_dim));
    auto v = random_floats(rng, static_cast<size_t>(capacity * c.kv_heads * c.head_dim));
    std::vector<float> out(q.size(), NAN);
    AttentionParams p;
    p.q = Tensor::view(q.data(), DType::f32, {c.tokens, c.heads, c.head_dim});
    p.k_cache = Tensor::view(k.data(), DType::f32, {capacity, c.kv_heads, c.head_dim});
    p.v_cache = Tensor::view(v.data(), DType::f32, {capacity, c.kv_heads, c.head_dim});
    p.out = Tensor::view(out.data(), DType::f32, {c.tokens, c.heads, c.head_dim});
    p.start_position = c.start;
    p.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    p.sliding_window = c.window;
    cpu.attention(p);
    const int group = c.heads / c.kv_heads;
    for (int i = 0; i < c.tokens; ++i)
      for (int h = 0; h < c.heads; ++h) {
        const int pos = c.start + i, kvh = h / group;
        const int first = c.window ? std::max(0, pos - c.window + 1) : 0;
        std::vector<double> w;
        double mx = -1e300;
        for (int j = first; j <= pos; ++j) {
          double dot = 0;
          for (int d = 0; d < c.head_dim; ++d)
            dot += double{q[(i * c.heads + h) * c.head_dim + d]} *
                   k[(j * c.kv_heads + kvh) * c.head_dim + d];
          w.push_back(dot * p.scale);
          mx = std::max(mx, w.back());
        }
        double total = 0;
        for (double& s : w) total += (s = std::exp(s - mx));
        for (int d = 0; d < c.head_dim; ++d) {
          double ref = 0;
          for (int j = first; j <= pos; ++j)
            ref += w[j - first] / total * v[(j * c.kv_heads + kvh) * c.head_dim + d];
          ASSERT_NEAR(out[(i * c.heads + h) * c.head_dim + d], ref, 1e-5);
        }
      }
  }
}

// Ops large enough for the thread pool give the same bits on one thread and
// on two: work is split by output, never within a sum. (ctest runs every
// test with OMP_NUM_THREADS=1, so this is where the pool runs.)
TEST_F(CpuOps, TwoThreadsGiveTheBitsOfOne) {
  const int64_t m = 4, k = 512, n = 256;  // m * n * k = 2^19 >= kMinParallelWork
  auto x = random_floats(rng, static_cast<size_t>(m * k));
  auto w = random_floats(rng, static_cast<size_t>(n * k));
  const int tokens = 32, heads = 8, kv_heads = 2, head_dim = 64;  // 32 * 8 * 32 * 64 = 2^19
  auto q = random_floats(rng, static_cast<size_t>(tokens * heads * head_dim));
  auto kv = random_floats(rng, static_cast<size_t>(tokens * kv_heads * head_dim));
  const auto run = [&](int threads) {
    cpu::set_cpu_threads(threads);
    std::vector<float> out(static_cast<size_t>(m * n)), attended(q.size());
    cpu.matmul(Tensor::view(x.data(), DType::f32, {m, k}),
               Tensor::view(w.data(), DType::f32, {n, k}), nullptr,
               Tensor::view(out.data(), DType::f32, {m, n}));
    AttentionParams p;
    p.q = Tensor::view(q.data(), DType::f32, {tokens, heads, head_dim});
    p.k_cache = Tensor::view(kv.data(), DType::f32, {tokens, kv_heads, head_dim});
    p.v_cache = p.k_cache;
    p.out = Tensor::view(attended.data(), DType::f32, {tokens, heads, head_dim});
    p.scale = 0.125f;
    cpu.attention(p);
    out.insert(out.end(), attended.begin(), attended.end());
    return out;
  };
  const int threads = cpu::cpu_threads();
  const std::vector<float> one = run(1), two = run(2);
  cpu::set_cpu_threads(threads);
  ASSERT_EQ(one.size(), two.size());
  EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)), 0);
}

TEST_F(CpuOps, AttentionRejectsContextBeyondCapacity) {
  std::vector<float> q(8), kv(8), out(8);
  AttentionParams p;
  p.q = Tensor::view(q.data(), DType::f32, {2, 1, 4});
  p.k_cache = Tensor::view(kv.data(), DType::f32, {2, 1, 4});
  p.v_cache = p.k_cache;
  p.out = Tensor::view(out.data(), DType::f32, {2, 1, 4});
  p.start_position = 1;  // needs 3 rows
  EXPECT_THROW(cpu.attention(p), Error);
}

TEST(DType, HalfConversionsRoundTrip) {
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.5f)), 1.5f);
  EXPECT_EQ(f16_to_f32(f32_to_f16(-2.25f)), -2.25f);
  // Round to nearest even: 1 + 2^-8 is halfway between two bf16 values.
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
}

// e4m3 by its definition: bias 7, subnormals below 2^-6, 0x7f the NaN.
float f8_e4m3_by_definition(int code) {
  const int exponent = (code >> 3) & 0xf, mantissa = code & 7;
  const float magnitude = exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -9)
                                        : std::ldexp(1.0f + static_cast<float>(mantissa) / 8,
                                                     exponent - 7);
  return (code & 0x80) ? -magnitude : magnitude;
}

TEST(DType, F8E4M3DecodesEveryCode) {
  for (int code = 0; code < 256; ++code) {
    const float value = f8_e4m3_to_f32(static_cast<uint8_t>(code));
    if ((code & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(value)) << code;
      continue;
    }
    EXPECT_EQ(value, f8_e4m3_by_definition(code)) << code;
    EXPECT_EQ(std::signbit(value), (code & 0x80) != 0) << code;
  }
  EXPECT_EQ(f8_e4m3_to_f32(0x7e), 448.0f);
}

TEST(DType, F8E4M3RoundsToNearestEvenAndSaturates) {
  // Every finite code comes back; each midpoint between neighbours goes to
  // the one with an even mantissa; random values go to the nearest code.
  std::vector<std::pair<float, int>> codes;
  for (int code = 0; code < 0x7f; ++code) {
    EXPECT_EQ(f32_to_f8_e4m3(f8_e4m3_to_f32(static_cast<uint8_t>(code))), code);
    EXPECT_EQ(f32_to_f8_e4m3(-f8_e4m3_to_f32(static_cast<uint8_t>(code))), code | 0x80);
    codes.emplace_back(f8_e4m3_by_definition(code), code);
  }
  for (size_t i = 1; i < codes.size(); ++i) {
    const float mid = (codes[i - 1].first + codes[i].first) / 2;
    const int even = codes[i - 1].second % 2 == 0 ? codes[i - 1].second : codes[i].second;
    EXPECT_EQ(f32_to_f8_e4m3(mid), even) << mid;
  }
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> log_magnitude(-12.0f, 9.0f);
  for (int i = 0; i < 20000; ++i) {
    const float x = std::exp2(log_magnitude(gen));
    int nearest = 0;
    for (const auto& [value, code] : codes)
      if (std::abs(value - x) < std::abs(codes[static_cast<size_t>(nearest)].first - x))
        nearest = code;
    if (x > 448.0f) nearest = 0x7e;
    const float gap = std::abs(codes[static_cast<size_t>(nearest)].first - x);
    const int got = f32_to_f8_e4m3(x);
    // A tie is the midpoint test's; elsewhere the nearest code is unique.
    EXPECT_EQ(std::abs(f8_e4m3_to_f32(static_cast<uint8_t>(got)) - x), gap) << x;
  }
  EXPECT_EQ(f32_to_f8_e4m3(1000.0f), 0x7e);
  EXPECT_EQ(f32_to_f8_e4m3(-INFINITY), 0xfe);
  EXPECT_EQ(f32_to_f8_e4m3(NAN) & 0x7f, 0x7f);
}

TEST(DType, OneByteTypesAreNamedAndSized) {
  EXPECT_EQ(parse_dtype("F8_E4M3"), DType::f8_e4m3);
  EXPECT_EQ(parse_dtype("float8_e4m3fn"), DType::f8_e4m3);
  EXPECT_EQ(parse_dtype("int8"), DType::i8);
  EXPECT_EQ(dtype_size(DType::f8_e4m3), 1u);
  EXPECT_EQ(dtype_bytes(DType::i8, 10), 10);
  EXPECT_EQ(dtype_name(DType::f8_e4m3), "f8_e4m3");
  EXPECT_FALSE(is_float(DType::i8));
  EXPECT_FALSE(is_quantized(DType::f8_e4m3));
}

}  // namespace
}  // namespace hive
