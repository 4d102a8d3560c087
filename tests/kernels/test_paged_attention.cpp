// The per-sequence paged attention (the batched op's reference, see
// test_batched_paged_attention.cpp) against the contiguous reference. Each case
// scatters a random K/V context over shuffled blocks of a pool whose other
// blocks hold NaN, so a read through a wrong table entry shows up; outputs are
// poisoned before the run and framed by guard values that must survive.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/ops.hpp"
#include "tests/common/random.hpp"

namespace hive {
namespace {

struct Case {
  int64_t num_heads, num_kv_heads, head_dim, block_size;
  int64_t start_position, num_tokens, sliding_window;
};

std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << "heads=" << c.num_heads << " kv_heads=" << c.num_kv_heads
            << " head_dim=" << c.head_dim << " block_size=" << c.block_size
            << " start=" << c.start_position << " tokens=" << c.num_tokens
            << " window=" << c.sliding_window;
}

constexpr float kGuard = 12345.0f;
constexpr int64_t kGuardElems = 64;

void run_case(const Case& c, std::mt19937_64& rng) {
  SCOPED_TRACE(testing::Message() << c);
  CpuBackend cpu;
  const int64_t context = c.start_position + c.num_tokens;
  const int64_t row = c.num_kv_heads * c.head_dim;
  const int64_t table_len = (context + c.block_size - 1) / c.block_size;
  const int64_t num_blocks = table_len + 3;  // spare blocks the table never names
  auto q = test::random_floats(rng, static_cast<size_t>(c.num_tokens * c.num_heads * c.head_dim));
  auto k = test::random_floats(rng, static_cast<size_t>(context * row));
  auto v = test::random_floats(rng, static_cast<size_t>(context * row));

  std::vector<int32_t> table(static_cast<size_t>(num_blocks));
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), rng);
  table.resize(static_cast<size_t>(table_len));
  const auto pool_elems = static_cast<size_t>(num_blocks * c.block_size * row);
  std::vector<float> k_pool(pool_elems, NAN), v_pool(pool_elems, NAN);
  for (int64_t t = 0; t < context; ++t) {
    const int64_t slot =
        table[static_cast<size_t>(t / c.block_size)] * c.block_size + t % c.block_size;
    std::copy_n(k.begin() + t * row, row, k_pool.begin() + slot * row);
    std::copy_n(v.begin() + t * row, row, v_pool.begin() + slot * row);
  }

  const int64_t out_elems = c.num_tokens * c.num_heads * c.head_dim;
  std::vector<float> expected(static_cast<size_t>(out_elems), NAN);
  AttentionParams ref;
  ref.q = Tensor::view(q.data(), DType::f32, {c.num_tokens, c.num_heads, c.head_dim});
  ref.k_cache = Tensor::view(k.data(), DType::f32, {context, c.num_kv_heads, c.head_dim});
  ref.v_cache = Tensor::view(v.data(), DType::f32, {context, c.num_kv_heads, c.head_dim});
  ref.out = Tensor::view(expected.data(), DType::f32, {c.num_tokens, c.num_heads, c.head_dim});
  ref.start_position = c.start_position;
  ref.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  ref.sliding_window = c.sliding_window;
  cpu.attention(ref);

  std::vector<float> framed(static_cast<size_t>(out_elems + 2 * kGuardElems), NAN);
  std::fill_n(framed.begin(), kGuardElems, kGuard);
  std::fill_n(framed.end() - kGuardElems, kGuardElems, kGuard);
  cpu::SequencePagedAttentionParams paged;
  paged.q = ref.q;
  paged.k_blocks = Tensor::view(k_pool.data(), DType::f32,
                                {num_blocks, c.block_size, c.num_kv_heads, c.head_dim});
  paged.v_blocks = Tensor::view(v_pool.data(), DType::f32,
                                {num_blocks, c.block_size, c.num_kv_heads, c.head_dim});
  paged.block_table = Tensor::view(table.data(), DType::i32, {table_len});
  paged.out = Tensor::view(framed.data() + kGuardElems, DType::f32,
                           {c.num_tokens, c.num_heads, c.head_dim});
  paged.start_position = c.start_position;
  paged.scale = ref.scale;
  paged.sliding_window = c.sliding_window;
  cpu::paged_attention_sequence(paged);

  for (int64_t i = 0; i < kGuardElems; ++i) {
    ASSERT_EQ(framed[static_cast<size_t>(i)], kGuard) << "write before the output";
    ASSERT_EQ(framed[framed.size() - 1 - static_cast<size_t>(i)], kGuard) << "write after it";
  }
  const float* got = framed.data() + kGuardElems;
  for (int64_t i = 0; i < out_elems; ++i) ASSERT_TRUE(std::isfinite(got[i])) << "element " << i;
  EXPECT_LE(test::nmse(got, expected.data(), static_cast<size_t>(out_elems)), 1e-12);
}

TEST(PagedAttention, MatchesContiguousReferenceOnRandomShapes) {
  std::mt19937_64 rng(test::test_seed());
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  std::uniform_int_distribution<int> pick(0, 1 << 30);
  const int64_t gqa[][2] = {{4, 4}, {4, 2}, {8, 2}, {6, 1}};
  for (const int64_t block_size : {1, 4, 16}) {
    // Context lengths around block boundaries, 1 and block_size +- 1 included.
    std::vector<int64_t> lengths = {
        1, 2, block_size - 1, block_size, block_size + 1, 2 * block_size, 3 * block_size + 1};
    lengths.erase(std::remove_if(lengths.begin(), lengths.end(), [](int64_t n) { return n < 1; }),
                  lengths.end());
    for (const int64_t context : lengths) {
      const auto& heads = gqa[pick(rng) % 4];
      const int64_t head_dim =
          std::array<int64_t, 3>{8, 16, 32}[static_cast<size_t>(pick(rng) % 3)];
      // Prefill from 0, a chunk in the middle and a one-token decode step.
      const int64_t chunk_start = context > 1 ? pick(rng) % context : 0;
      for (const int64_t start : {int64_t{0}, chunk_start, context - 1}) {
        for (const int64_t window : {int64_t{0}, int64_t{3}}) {
          run_case({heads[0], heads[1], head_dim, block_size, start, context - start, window}, rng);
        }
      }
    }
  }
}

TEST(PagedAttention, RejectsBadBlockTables) {
  std::vector<float> q(2 * 2 * 4, 1.0f), out(q.size()), pool(3 * 2 * 1 * 4, 0.5f);
  std::vector<int32_t> table = {2, 5};
  cpu::SequencePagedAttentionParams p;
  p.q = Tensor::view(q.data(), DType::f32, {2, 2, 4});
  p.out = Tensor::view(out.data(), DType::f32, {2, 2, 4});
  p.k_blocks = p.v_blocks = Tensor::view(pool.data(), DType::f32, {3, 2, 1, 4});
  p.block_table = Tensor::view(table.data(), DType::i32, {2});
  p.start_position = 1;
  try {
    cpu::paged_attention_sequence(p);
    FAIL() << "expected an error for block id 5";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("entry 1 is 5, expected a block id in [0, 3)"),
              std::string::npos)
        << e.what();
  }
  p.block_table = Tensor::view(table.data(), DType::i32, {1});
  try {
    cpu::paged_attention_sequence(p);
    FAIL() << "expected an error for a context longer than the table";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("context of 3 tokens exceeds the 1 blocks of 2"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace hive
