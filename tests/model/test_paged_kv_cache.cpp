// PagedKVCache block copies (copy-on-write, swap out, swap in) move exactly
// one block of every layer's K and V; kv_budget turns bytes into blocks.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/kv_quant.hpp"
#include "runtime/model/kv_budget.hpp"
#include "runtime/model/paged_kv_cache.hpp"

namespace hive {
namespace {

ModelConfig small_config() {
  ModelConfig c;
  c.num_layers = 2;
  c.num_kv_heads = 2;
  c.head_dim = 3;
  return c;
}

// Element i of a cache tensor, f32 or bf16, as f32.
float get(const Tensor& t, int64_t i) {
  return t.dtype == DType::bf16 ? bf16_to_f32(t.as<uint16_t>()[i]) : t.as<float>()[i];
}

// `value` as the cache stores it (bf16 rounds: 1473 is kept as 1472).
float stored(const PagedKVCache& cache, float value) {
  return cache.dtype() == DType::bf16 ? bf16_to_f32(f32_to_bf16(value)) : value;
}

// Every element of block b in layer l holds 1000 * l + 100 * b + (K ? 0 : 50) + index.
void fill(PagedKVCache& cache) {
  for (int64_t layer = 0; layer < cache.num_layers(); ++layer) {
    for (const bool is_key : {true, false}) {
      const Tensor& t = is_key ? cache.keys(layer) : cache.values(layer);
      const int64_t per_block = t.numel() / t.shape[0];
      for (int64_t i = 0; i < t.numel(); ++i) {
        const auto value = static_cast<float>(1000 * layer + 100 * (i / per_block) +
                                              (is_key ? 0 : 50) + i % per_block);
        if (t.dtype == DType::bf16)
          t.as<uint16_t>()[i] = f32_to_bf16(value);
        else
          t.as<float>()[i] = value;
      }
    }
  }
}

float first(const PagedKVCache& cache, int64_t layer, bool is_key, int64_t block) {
  const Tensor& t = is_key ? cache.keys(layer) : cache.values(layer);
  return get(t, block * (t.numel() / t.shape[0]));
}

// bf16 by default: half the bytes of f32 per block, so twice the blocks in
// a budget.
TEST(PagedKVCache, LayoutAndBytesPerBlock) {
  CpuBackend cpu;
  PagedKVCache cache(cpu, small_config(), 5, 4, 3);
  EXPECT_EQ(cache.keys(1).shape_string(), "[5, 4, 2, 3] bf16");
  EXPECT_EQ(cache.bytes_per_block(), 2 * 2 * 4 * 2 * 3 * 2);
  EXPECT_EQ(cache.bytes_per_block(), kv_bytes_per_block(small_config(), 4, DType::bf16));
  PagedKVCache f32_cache(cpu, small_config(), 5, 4, 3, DType::f32);
  EXPECT_EQ(f32_cache.keys(1).shape_string(), "[5, 4, 2, 3] f32");
  EXPECT_EQ(f32_cache.bytes_per_block(), 2 * 2 * 4 * 2 * 3 * 4);
  EXPECT_EQ(f32_cache.bytes_per_block(), kv_bytes_per_block(small_config(), 4, DType::f32));
  const int64_t budget = 1000 * f32_cache.bytes_per_block();
  EXPECT_EQ(num_kv_blocks(budget, f32_cache.bytes_per_block()), 1000);
  EXPECT_EQ(num_kv_blocks(budget, cache.bytes_per_block()), 2000);
  EXPECT_THROW(PagedKVCache(cpu, small_config(), 5, 4, 3, DType::f16), Error);
}

TEST(PagedKVCache, CopiesMoveWholeBlocksOfEveryLayer) {
  CpuBackend cpu;
  for (const DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(dtype_name(dtype));
    PagedKVCache cache(cpu, small_config(), 5, 4, 3, dtype);
    fill(cache);
    cache.copy_blocks(std::vector<BlockCopy>{{2, 4}});
    for (int64_t layer = 0; layer < 2; ++layer) {
      EXPECT_EQ(first(cache, layer, true, 4), stored(cache, 1000 * layer + 200));
      EXPECT_EQ(first(cache, layer, false, 4), stored(cache, 1000 * layer + 250));
      EXPECT_EQ(first(cache, layer, true, 3), stored(cache, 1000 * layer + 300));  // untouched
    }
    EXPECT_EQ(get(cache.keys(0), 4 * 24 + 23), 200 + 23);  // the block's last element too

    cache.swap_out(std::vector<BlockCopy>{{1, 2}, {3, 1}});
    fill(cache);  // overwrite the device side
    cache.swap_in(std::vector<BlockCopy>{{2, 3}, {1, 4}});
    for (int64_t layer = 0; layer < 2; ++layer) {
      EXPECT_EQ(first(cache, layer, true, 3), stored(cache, 1000 * layer + 100));   // old block 1
      EXPECT_EQ(first(cache, layer, false, 4), stored(cache, 1000 * layer + 350));  // old block 3
      EXPECT_EQ(first(cache, layer, true, 2), stored(cache, 1000 * layer + 200));
    }
  }
}

// MLA: one latent row of kv_lora_rank + qk_rope_head_dim per token and
// layer, no value blocks (values() is keys()), half the bytes of K + V;
// copies and swaps move the rows.
TEST(PagedKVCache, MlaStoresOneLatentRowAndNoValues) {
  CpuBackend cpu;
  ModelConfig c = small_config();
  c.num_heads = 3;
  c.mla = MlaConfig{0, 6, 4, 2, 5};  // rows of 6 + 2
  PagedKVCache cache(cpu, c, 5, 4, 3);
  EXPECT_FALSE(cache.has_values());
  EXPECT_EQ(cache.keys(1).shape_string(), "[5, 4, 1, 8] bf16");
  EXPECT_EQ(cache.values(1).data, cache.keys(1).data);
  EXPECT_EQ(cache.bytes_per_block(), 2 * 4 * 8 * 2);
  EXPECT_EQ(cache.bytes_per_block(), kv_bytes_per_block(c, 4, DType::bf16));
  EXPECT_EQ(c.kv_bytes_per_token(2), 2 * 8 * 2);
  EXPECT_EQ(c.mha_kv_bytes_per_token(2), 2 * 3 * (4 + 2 + 5) * 2);
  fill(cache);
  cache.copy_blocks(std::vector<BlockCopy>{{2, 4}});
  cache.swap_out(std::vector<BlockCopy>{{1, 2}});
  fill(cache);
  cache.swap_in(std::vector<BlockCopy>{{2, 3}});
  for (int64_t layer = 0; layer < 2; ++layer) {
    // fill()'s values pass (+50) ran last, into the same tensor as the keys.
    EXPECT_EQ(first(cache, layer, true, 3), stored(cache, 1000 * layer + 150));  // old block 1
    EXPECT_EQ(first(cache, layer, true, 2), stored(cache, 1000 * layer + 250));
  }
}

// int8 / fp8: rows of head_dim one-byte codes and an f32 scale, head_dim + 4
// bytes where bf16 takes 2 * head_dim; a budget buys blocks accordingly.
TEST(PagedKVCache, QuantizedRowsCarryTheirScales) {
  CpuBackend cpu;
  ModelConfig c = small_config();
  c.head_dim = 64;
  for (const DType dtype : {DType::i8, DType::f8_e4m3}) {
    SCOPED_TRACE(dtype_name(dtype));
    PagedKVCache cache(cpu, c, 5, 4, 3, dtype);
    EXPECT_EQ(cache.keys(1).shape_string(), "[5, 4, 2, 68] " + std::string(dtype_name(dtype)));
    EXPECT_EQ(cache.bytes_per_block(), 2 * 2 * 4 * 2 * (64 + 4));
    EXPECT_EQ(cache.bytes_per_block(), kv_bytes_per_block(c, 4, dtype));
    // 128 + 128 bytes of bf16 K and V per head and token against 68 + 68.
    const int64_t budget = 1000 * kv_bytes_per_block(c, 4, DType::bf16);
    EXPECT_EQ(num_kv_blocks(budget, cache.bytes_per_block()), 1882);
  }
}

// reshape_and_cache quantizes each (token, head) row with its scale; block
// copies and swaps move codes and scales together, byte for byte, and the
// moved rows still read back as the values written.
TEST(PagedKVCache, QuantizedCopiesAndSwapsMoveScalesWithTheCodes) {
  CpuBackend cpu;
  ModelConfig c = small_config();
  c.head_dim = 8;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const DType dtype : {DType::i8, DType::f8_e4m3}) {
    SCOPED_TRACE(dtype_name(dtype));
    PagedKVCache cache(cpu, c, 5, 4, 3, dtype);
    // Blocks 1..4 full: 16 tokens, each head's rows at a different scale.
    std::vector<float> k(16 * 2 * 8), v(k.size());
    for (size_t i = 0; i < k.size(); ++i) {
      const auto scale = static_cast<float>(1 + i / 8);
      k[i] = scale * normal(rng), v[i] = -scale * normal(rng);
    }
    std::vector<int64_t> slots(16);
    for (size_t i = 0; i < slots.size(); ++i) slots[i] = 4 + static_cast<int64_t>(i);
    const Tensor kt = Tensor::view(k.data(), DType::f32, {16, 2, 8});
    const Tensor vt = Tensor::view(v.data(), DType::f32, {16, 2, 8});
    const Tensor st = Tensor::view(slots.data(), DType::i64, {16});
    for (int64_t layer = 0; layer < 2; ++layer)
      cpu.reshape_and_cache(kt, vt, st, cache.keys(layer), cache.values(layer));
    // Token 5's head 1 (slot 9: block 2, row 1) reads back within half a step.
    const uint8_t* row = cache.keys(1).as<uint8_t>() + (9 * 2 + 1) * 12;
    float back[8];
    dequantize_kv_row(row, 8, dtype, back);
    const float* x = k.data() + (5 * 2 + 1) * 8;
    for (int d = 0; d < 8; ++d)
      EXPECT_NEAR(back[d], x[d],
                  dtype == DType::i8 ? kv_row_scale(row, 8) / 2 : std::fabs(x[d]) / 16 + 1e-6f);
    const auto block_bytes = [&](const Tensor& t, int64_t b) {
      const auto* p = t.as<uint8_t>() + b * 4 * 2 * 12;
      return std::vector<uint8_t>(p, p + 4 * 2 * 12);
    };
    const auto block2_k = block_bytes(cache.keys(1), 2), block3_v = block_bytes(cache.values(0), 3);
    cache.copy_blocks(std::vector<BlockCopy>{{2, 4}});
    EXPECT_EQ(block_bytes(cache.keys(1), 4), block2_k);
    cache.swap_out(std::vector<BlockCopy>{{3, 1}});
    std::memset(cache.values(0).as<uint8_t>() + 3 * 4 * 2 * 12, 0, 4 * 2 * 12);
    cache.swap_in(std::vector<BlockCopy>{{1, 3}});
    EXPECT_EQ(block_bytes(cache.values(0), 3), block3_v);
  }
}

// A quantized cache of latent rows (MLA) is refused, naming the option.
TEST(PagedKVCache, RefusesAQuantizedMlaCache) {
  CpuBackend cpu;
  ModelConfig c = small_config();
  c.num_heads = 3;
  c.mla = MlaConfig{0, 6, 4, 2, 5};
  try {
    PagedKVCache cache(cpu, c, 5, 4, 3, DType::i8);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("MLA"), std::string::npos) << e.what();
  }
}

// decode_e4m3's f16 route gives f8_e4m3_to_f32's value for every code but
// NaN's; quantized rows round-trip within half a step (int8) or e4m3's
// relative precision, and a row with a NaN or infinity reads back as NaN.
TEST(KVQuant, RowsRoundTripAndNonFiniteRowsReadAsNaN) {
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7f) == 0x7f) continue;
    const auto c = static_cast<uint8_t>(code);
    EXPECT_EQ(std::bit_cast<uint32_t>(decode_e4m3(c)), std::bit_cast<uint32_t>(f8_e4m3_to_f32(c)))
        << code;
  }
  std::mt19937_64 rng(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> x(128), back(128);
  for (float& v : x) v = normal(rng);
  x[5] = 1e-6f;  // an e4m3 subnormal after scaling
  for (const DType dtype : {DType::i8, DType::f8_e4m3}) {
    SCOPED_TRACE(dtype_name(dtype));
    std::vector<uint8_t> row(static_cast<size_t>(kv_row_elems(dtype, 128)));
    quantize_kv_row(x.data(), 128, dtype, row.data());
    float absmax = 0;
    for (const float v : x) absmax = std::max(absmax, std::fabs(v));
    EXPECT_EQ(kv_row_scale(row.data(), 128), absmax / kv_code_max(dtype));
    dequantize_kv_row(row.data(), 128, dtype, back.data());
    for (size_t d = 0; d < x.size(); ++d) {
      const float scale = kv_row_scale(row.data(), 128);
      // e4m3: 3 mantissa bits, half an ulp is 2^-4 of the value; below
      // 2^-6 (subnormal) the step is 2^-9, times the scale.
      const float bound =
          dtype == DType::i8 ? scale / 2 : std::max(std::fabs(x[d]) / 16, scale * 0x1p-10f);
      EXPECT_LE(std::fabs(back[d] - x[d]), bound * 1.0001f) << d;
    }
    for (const float bad : {NAN, INFINITY}) {
      std::vector<float> y = x;
      y[7] = bad;
      quantize_kv_row(y.data(), 128, dtype, row.data());
      dequantize_kv_row(row.data(), 128, dtype, back.data());
      for (const float v : back) EXPECT_TRUE(std::isnan(v));
    }
    std::vector<float> zeros(128, 0.0f);
    quantize_kv_row(zeros.data(), 128, dtype, row.data());
    dequantize_kv_row(row.data(), 128, dtype, back.data());
    for (const float v : back) EXPECT_EQ(v, 0.0f);
  }
}

TEST(KVBudget, ParsesTheFourCacheDtypes) {
  EXPECT_EQ(parse_kv_cache_dtype("bf16", "x"), DType::bf16);
  EXPECT_EQ(parse_kv_cache_dtype("f32", "x"), DType::f32);
  EXPECT_EQ(parse_kv_cache_dtype("int8", "x"), DType::i8);
  EXPECT_EQ(parse_kv_cache_dtype("fp8", "x"), DType::f8_e4m3);
  try {
    parse_kv_cache_dtype("f16", "--kv-cache-dtype");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--kv-cache-dtype: expected f32, bf16, int8 or fp8 (got 'f16')");
  }
}

TEST(PagedKVCache, RejectsBlockIdsOutsideThePools) {
  CpuBackend cpu;
  PagedKVCache cache(cpu, small_config(), 5, 4, 3);
  EXPECT_THROW(cache.copy_blocks(std::vector<BlockCopy>{{1, 5}}), Error);
  EXPECT_THROW(cache.copy_blocks(std::vector<BlockCopy>{{0, 1}}), Error);  // the null block
  EXPECT_THROW(cache.swap_out(std::vector<BlockCopy>{{4, 3}}), Error);     // host has 1..2
  EXPECT_THROW(cache.swap_in(std::vector<BlockCopy>{{3, 1}}), Error);
}

TEST(KVBudget, BlocksFromBytesOrAFractionOfMemory) {
  const ModelConfig c = small_config();
  const int64_t block = kv_bytes_per_block(c, 16, DType::f32);
  EXPECT_EQ(block, 16 * c.kv_bytes_per_token(4));
  EXPECT_EQ(num_kv_blocks(10 * block + block / 2, block), 10);
  // Memory of 1 MiB with 200,000 bytes free; every sequence at full length
  // would fill 50,000.
  const KVMemory memory{1 << 20, 200000, 50000};
  EXPECT_EQ(kv_pool_bytes({1000, 0.0}, memory), 1000);    // bytes: exactly, past the ceiling too
  EXPECT_EQ(kv_pool_bytes({70000, 0.5}, memory), 70000);  // bytes win over a fraction
  EXPECT_EQ(kv_pool_bytes({0, 0.2}, memory), 40000);      // a fraction of the free memory
  EXPECT_EQ(kv_pool_bytes({0, 0.5}, memory), 50000);      // no more than can be used
  EXPECT_EQ(kv_pool_bytes(KVBudget{}, {1 << 20, 1 << 20, int64_t{1} << 40}),
            static_cast<int64_t>(0.9 * (1 << 20)));  // the default: 0.9 of it
  // The ceiling: 3 sequences of 40 tokens in blocks of 16 are 3 x 3 blocks,
  // plus the null block; 0 (unknown) tokens, none.
  EXPECT_EQ(kv_useful_bytes(3, 40, 16, 100), 1000);
  EXPECT_EQ(kv_useful_bytes(3, 0, 16, 100), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(kv_useful_bytes(1 << 30, int64_t{1} << 40, 1, 1 << 20),
            std::numeric_limits<int64_t>::max());  // would overflow: no ceiling
  try {
    num_kv_blocks(block, block);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("hold 1 blocks"), std::string::npos) << e.what();
  }
  try {
    kv_pool_bytes({0, 0.25}, {4000, 3, 1000});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("0.25 of the 3 bytes free after loading the weights "
                                         "is nothing"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(kv_pool_bytes({0, 1.5}, {4000, 4000, 4000}), Error);
  try {
    kv_pool_bytes({int64_t{1} << 40, 0.0}, {int64_t{1} << 30, int64_t{1} << 30, 0});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("1099511627776 bytes exceed the memory there is "
                                         "(1073741824 bytes)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(num_swap_blocks(0, block), 0);
  EXPECT_EQ(num_swap_blocks(4 * block, block), 4);
  EXPECT_THROW(num_swap_blocks(host_memory_bytes() + 1, block), Error);
  EXPECT_GT(host_memory_bytes(), int64_t{1} << 20);
}

}  // namespace
}  // namespace hive
