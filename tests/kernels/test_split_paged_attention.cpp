// The context split of the batched paged attention (flash-decoding, see
// paged_attention_fast.cpp) on contexts past one chunk: against the
// per-sequence reference, and the invariants that make it safe to use
// everywhere, bit for bit: the same output on 1 and 2 threads, alone and
// batched, a decode and a prefill of the same position, and a context of one
// chunk exactly as the unsplit kernel gives it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/thread_pool.hpp"
#include "kernels/step_attention_plan.hpp"
#include "tests/common/cpu_paths.hpp"
#include "tests/common/cpu_settings.hpp"
#include "tests/common/random.hpp"

namespace hive {
namespace {

constexpr int64_t kHeadDim = 64, kKvHeads = 2, kBlockSize = 16;

// A pool holding `contexts` back to back in shuffled blocks, and one query
// per sequence (its last position) or `queries[s]` queries.
struct Pool {
  std::vector<int64_t> contexts, queries;
  int64_t group;
  DType dtype;
  std::vector<std::vector<int32_t>> tables;
  std::vector<float> q, k, v;
  std::vector<uint16_t> k_bf16, v_bf16;
  int64_t num_blocks = 0, num_tokens = 0;

  int64_t row() const { return kKvHeads * group * kHeadDim; }
};

Pool make_pool(std::mt19937_64& rng, std::vector<int64_t> contexts, std::vector<int64_t> queries,
               int64_t group, DType dtype) {
  Pool pool{std::move(contexts), std::move(queries), group, dtype, {}, {}, {}, {}, {}, {}, 0, 0};
  for (int64_t c : pool.contexts) pool.num_blocks += (c + kBlockSize - 1) / kBlockSize;
  std::vector<int32_t> ids(static_cast<size_t>(pool.num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  size_t next = 0;
  for (int64_t c : pool.contexts) {
    pool.tables.emplace_back(
        ids.begin() + static_cast<ptrdiff_t>(next),
        ids.begin() + static_cast<ptrdiff_t>(next) + (c + kBlockSize - 1) / kBlockSize);
    next += static_cast<size_t>((c + kBlockSize - 1) / kBlockSize);
  }
  const auto elems = static_cast<size_t>(pool.num_blocks * kBlockSize * kKvHeads * kHeadDim);
  pool.k = test::random_floats(rng, elems);
  pool.v = test::random_floats(rng, elems);
  if (dtype == DType::bf16) {
    pool.k_bf16 = test::to_half_bits(pool.k, DType::bf16);
    pool.v_bf16 = test::to_half_bits(pool.v, DType::bf16);
  }
  for (int64_t n : pool.queries) pool.num_tokens += n;
  pool.q = test::random_floats(rng, static_cast<size_t>(pool.num_tokens * pool.row()));
  return pool;
}

// Runs sequences [first, first + count) with the given context chunk (-1:
// the reference) and returns their output rows.
std::vector<float> run(Pool& pool, size_t first, size_t count, int64_t chunk) {
  CpuBackend cpu;
  std::vector<PlannedSequence> planned;
  int64_t first_query = 0, num_queries = 0;
  for (size_t s = 0; s < first; ++s) first_query += pool.queries[s];
  for (size_t s = first; s < first + count; ++s) {
    planned.push_back({pool.queries[s], pool.contexts[s], pool.tables[s]});
    num_queries += pool.queries[s];
  }
  const StepAttentionPlan plan(cpu, planned, pool.num_blocks, kBlockSize);
  std::vector<float> out(static_cast<size_t>(num_queries * pool.row()), NAN);
  const int64_t heads = kKvHeads * pool.group;
  PagedAttentionParams p;
  p.q = Tensor::view(pool.q.data() + first_query * pool.row(), DType::f32,
                     {num_queries, heads, kHeadDim});
  const int64_t shape[] = {pool.num_blocks, kBlockSize, kKvHeads, kHeadDim};
  const bool bf16 = pool.dtype == DType::bf16;
  p.k_blocks = bf16 ? Tensor::view(pool.k_bf16.data(), DType::bf16, shape, 4)
                    : Tensor::view(pool.k.data(), DType::f32, shape, 4);
  p.v_blocks = bf16 ? Tensor::view(pool.v_bf16.data(), DType::bf16, shape, 4)
                    : Tensor::view(pool.v.data(), DType::f32, shape, 4);
  p.out = Tensor::view(out.data(), DType::f32, {num_queries, heads, kHeadDim});
  p.plan = plan.plan();
  p.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  if (chunk < 0)
    cpu::paged_attention_reference(p);
  else
    cpu::paged_attention_chunked(p, chunk);
  return out;
}

// A pool of one prefill sequence as its queries' decodes: one one-query
// sequence per query, over the same table, each seeing up to its position.
Pool as_decodes(const Pool& prefill) {
  const int64_t context = prefill.contexts[0], queries = prefill.queries[0];
  Pool decode = prefill;
  decode.contexts.clear();
  decode.queries.assign(static_cast<size_t>(queries), 1);
  decode.tables.assign(static_cast<size_t>(queries), prefill.tables[0]);
  for (int64_t i = 0; i < queries; ++i) decode.contexts.push_back(context - queries + 1 + i);
  return decode;
}

bool same_bits(const std::vector<float>& a, const float* b) {
  return std::memcmp(a.data(), b, a.size() * sizeof(float)) == 0;
}

class SplitPagedAttention : public ::testing::Test {
 private:
  test::KeptCpuSettings kept_;
};

TEST_F(SplitPagedAttention, LongContextsMatchTheReference) {
  std::mt19937_64 rng(test::test_seed());
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  cpu::set_cpu_threads(2);
  for (const int64_t group : {1, 4, 8})
    for (const DType dtype : {DType::f32, DType::bf16}) {
      SCOPED_TRACE(testing::Message() << "group " << group << " " << dtype_name(dtype));
      // Decodes across 1, 4 and 5 chunks and a prefill chunk past one.
      Pool pool = make_pool(rng, {300, 4096, 4100, 1500}, {1, 1, 1, 20}, group, dtype);
      const std::vector<float> expected = run(pool, 0, 4, -1);
      const std::vector<float> got = run(pool, 0, 4, cpu::kContextChunk);
      EXPECT_LE(test::nmse(got.data(), expected.data(), got.size()), 1e-11);
    }
}

TEST_F(SplitPagedAttention, SameBitsOnOneAndTwoThreadsAloneAndBatched) {
  std::mt19937_64 rng(test::test_seed());
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  for (const int64_t group : {1, 4, 8}) {
    Pool pool = make_pool(rng, {5000, 77, 2049, 3000}, {1, 1, 1, 40}, group, DType::bf16);
    cpu::set_cpu_threads(1);
    const std::vector<float> one_thread = run(pool, 0, 4, cpu::kContextChunk);
    cpu::set_cpu_threads(2);
    const std::vector<float> two = run(pool, 0, 4, cpu::kContextChunk);
    ASSERT_TRUE(same_bits(one_thread, two.data())) << "group " << group << ": 1 and 2 threads";
    int64_t offset = 0;
    for (size_t s = 0; s < 4; ++s) {
      const std::vector<float> alone = run(pool, s, 1, cpu::kContextChunk);
      EXPECT_TRUE(same_bits(alone, two.data() + offset * pool.row()))
          << "group " << group << ": sequence " << s << " alone differs from the batch";
      offset += pool.queries[s];
    }
  }
}

// A prefill folds its chunks on one thread; a decode of the same position
// runs them as tasks and merges after: the same fold, the same bits. Small
// chunks so that every query spans many.
TEST_F(SplitPagedAttention, DecodeGivesThePrefillBitsOfTheSamePosition) {
  std::mt19937_64 rng(test::test_seed());
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  cpu::set_cpu_threads(2);
  constexpr int64_t kChunk = 64, kContext = 300, kPrefill = 40;
  Pool prefill = make_pool(rng, {kContext}, {kPrefill}, 4, DType::f32);
  const std::vector<float> whole = run(prefill, 0, 1, kChunk);
  Pool decode = as_decodes(prefill);
  EXPECT_TRUE(same_bits(run(decode, 0, kPrefill, kChunk), whole.data()));
  // And the split is a real one: other chunk edges round differently.
  EXPECT_FALSE(same_bits(run(prefill, 0, 1, 0), whole.data()));
}

// The same in the bf16 mode (cpu_features.hpp) on a bf16 cache, whose
// tiles (add_tile_bf16) run in the chunks of a prefill and of a decode
// alike; and its splits stay close to the reference.
TEST_F(SplitPagedAttention, Bf16ModeDecodeGivesThePrefillBitsAndSplitsStayClose) {
  HIVE_SKIP_WITHOUT_CPU_PATH(cpu::CpuPath::avx512_bf16);
  std::mt19937_64 rng(test::test_seed());
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  cpu::set_cpu_threads(2);
  cpu::set_matmul_precision(cpu::MatmulPrecision::bf16);
  constexpr int64_t kChunk = 64, kContext = 300, kPrefill = 40;
  for (const cpu::CpuPath path : {cpu::CpuPath::avx512_bf16, cpu::CpuPath::amx}) {
    if (path > cpu::best_cpu_path()) continue;
    cpu::set_cpu_kernel_path(path);
    SCOPED_TRACE(cpu::cpu_path_name(path));
    for (const int64_t group : {1, 4}) {
      Pool prefill = make_pool(rng, {kContext}, {kPrefill}, group, DType::bf16);
      const std::vector<float> whole = run(prefill, 0, 1, kChunk);
      Pool decode = as_decodes(prefill);
      EXPECT_TRUE(same_bits(run(decode, 0, kPrefill, kChunk), whole.data())) << "group " << group;
      Pool long_contexts =
          make_pool(rng, {300, 4096, 4100, 1500}, {1, 1, 1, 20}, group, DType::bf16);
      const std::vector<float> expected = run(long_contexts, 0, 4, -1);
      const std::vector<float> got = run(long_contexts, 0, 4, cpu::kContextChunk);
      EXPECT_LE(test::nmse(got.data(), expected.data(), got.size()), test::kBf16AttentionNmse)
          << "group " << group;
    }
  }
}

TEST_F(SplitPagedAttention, OneChunkGivesTheUnsplitBits) {
  std::mt19937_64 rng(test::test_seed());
  cpu::set_cpu_threads(2);
  Pool pool = make_pool(rng, {cpu::kContextChunk, 513, 1}, {1, 7, 1}, 4, DType::f32);
  EXPECT_TRUE(same_bits(run(pool, 0, 3, cpu::kContextChunk), run(pool, 0, 3, 0).data()));
}

TEST(SplitPagedAttentionChunk, RejectsAChunkOffTheTileGrid) {
  std::mt19937_64 rng(1);
  Pool pool = make_pool(rng, {40}, {1}, 1, DType::f32);
  try {
    run(pool, 0, 1, 48);
    FAIL() << "expected an error for a chunk of 48";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("context chunk of 48"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hive
