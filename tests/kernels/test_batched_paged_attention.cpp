// The batched varlen paged attention (cpu::paged_attention, one call per layer
// per step) against its reference, the per-sequence loop
// (cpu::paged_attention_reference), on random steps: mixes of decodes,
// prefill chunks and whole prompts, GQA ratios 1/2/4, head_dim 64/128, block
// sizes 1/16, sliding window on and off, ragged contexts. Seeded (seed
// printed), outputs poisoned and framed by guards, K/V pools whose unused
// blocks hold NaN. And the invariants the engine's tests rely on, bit for
// bit: a sequence's output is the same alone or in any batch, whole or split
// into chunks, on 1 thread or 2. Quantized caches (i8, f8_e4m3 rows with
// their scales) against the same kernels on the dequantized values (bit for
// bit) and on the unquantized f32 cache (within a stated bound).
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
#include "kernels/kv_quant.hpp"
#include "kernels/step_attention_plan.hpp"
#include "tests/common/cpu_paths.hpp"
#include "tests/common/cpu_settings.hpp"
#include "tests/common/random.hpp"

namespace hive {
namespace {

constexpr size_t kGuard = 64;                // floats either side of an output
constexpr uint32_t kPoison = 0x7fc0dead;     // a NaN no kernel produces
constexpr uint32_t kGuardBits = 0x7fc0beef;  // likewise, outside the output

struct Shape {
  int64_t num_heads, num_kv_heads, head_dim, block_size, sliding_window;
};

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  return os << "heads=" << s.num_heads << " kv_heads=" << s.num_kv_heads
            << " head_dim=" << s.head_dim << " block_size=" << s.block_size
            << " window=" << s.sliding_window;
}

struct Sequence {
  int64_t num_queries, context_len;
  std::vector<int32_t> table;
};

// One step: its sequences, their queries back to back, and one layer's pool.
struct Step {
  Shape shape;
  std::vector<Sequence> sequences;
  std::vector<float> q, k_pool, v_pool;
  int64_t num_blocks = 0, num_tokens = 0;
  std::vector<uint16_t> k_bf16, v_bf16;  // when set, the pools as a bf16 cache
  DType quantized = DType::f32;          // i8 or f8_e4m3: the pools as k_rows, v_rows
  std::vector<uint8_t> k_rows, v_rows;

  int64_t row() const { return shape.num_heads * shape.head_dim; }
  Tensor pool(std::vector<float>& data) const {
    return Tensor::view(data.data(), DType::f32,
                        {num_blocks, shape.block_size, shape.num_kv_heads, shape.head_dim});
  }
};

std::ostream& operator<<(std::ostream& os, const Step& step) {
  os << step.shape << " sequences (queries/context):";
  for (const Sequence& s : step.sequences) os << " " << s.num_queries << "/" << s.context_len;
  return os;
}

// A step of 1-6 sequences, each a decode, a prefill chunk or a whole prompt.
// Blocks are shuffled over a pool with spare blocks of NaN; with a sliding
// window, blocks no query sees point at a NaN placeholder block.
Step random_step(std::mt19937_64& rng, const Shape& shape) {
  Step step{shape, {}, {}, {}, {}, 0, 0, {}, {}, DType::f32, {}, {}};
  std::uniform_int_distribution<int64_t> num_seqs(1, 6), kind(0, 2), context(1, 300), chunk(1, 40);
  const int64_t bs = shape.block_size;
  std::vector<int64_t> lens;
  int64_t table_blocks = 0;
  for (int64_t s = num_seqs(rng); s > 0; --s) {
    const int64_t len = context(rng);
    const int64_t k = kind(rng);
    const int64_t queries = k == 0 ? 1 : k == 1 ? std::min(len, chunk(rng)) : len;
    step.sequences.push_back({queries, len, {}});
    table_blocks += (len + bs - 1) / bs;
  }
  step.num_blocks = table_blocks + 4;  // block num_blocks - 1 is the placeholder
  std::vector<int32_t> ids(static_cast<size_t>(step.num_blocks - 1));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  const int64_t kv_row = shape.num_kv_heads * shape.head_dim;
  const auto pool_elems = static_cast<size_t>(step.num_blocks * bs * kv_row);
  step.k_pool.assign(pool_elems, NAN);
  step.v_pool.assign(pool_elems, NAN);
  size_t next = 0;
  for (Sequence& s : step.sequences) {
    const int64_t first_seen =
        shape.sliding_window > 0
            ? std::max<int64_t>(0, s.context_len - s.num_queries - shape.sliding_window + 1)
            : 0;
    for (int64_t b = 0; b < (s.context_len + bs - 1) / bs; ++b) {
      const bool unseen = (b + 1) * bs <= first_seen;
      const int32_t id = unseen ? static_cast<int32_t>(step.num_blocks - 1) : ids[next++];
      s.table.push_back(id);
      if (unseen) continue;
      const auto values = static_cast<size_t>(bs * kv_row);
      const auto at = static_cast<size_t>(id) * values;
      const auto k = test::random_floats(rng, values), v = test::random_floats(rng, values);
      std::copy(k.begin(), k.end(), step.k_pool.begin() + static_cast<ptrdiff_t>(at));
      std::copy(v.begin(), v.end(), step.v_pool.begin() + static_cast<ptrdiff_t>(at));
    }
    step.num_tokens += s.num_queries;
  }
  step.q = test::random_floats(rng, static_cast<size_t>(step.num_tokens * step.row()));
  return step;
}

// An output of rows x row floats between two guard zones, poisoned.
struct GuardedOutput {
  GuardedOutput(int64_t rows, int64_t row)
      : size(static_cast<size_t>(rows * row)), storage(size + 2 * kGuard) {
    for (size_t i = 0; i < storage.size(); ++i) {
      const uint32_t bits = i < kGuard || i >= kGuard + size ? kGuardBits : kPoison;
      std::memcpy(&storage[i], &bits, 4);
    }
  }
  float* data() { return storage.data() + kGuard; }
  ::testing::AssertionResult intact() const {
    for (size_t i = 0; i < storage.size(); ++i) {
      uint32_t bits;
      std::memcpy(&bits, &storage[i], 4);
      const bool guard = i < kGuard || i >= kGuard + size;
      if (guard && bits != kGuardBits) return ::testing::AssertionFailure() << "guard overwritten";
      if (!guard && !std::isfinite(storage[i]))
        return ::testing::AssertionFailure() << "output " << i - kGuard << " not finite";
    }
    return ::testing::AssertionSuccess();
  }
  size_t size;
  std::vector<float> storage;
};

// Runs sequences [first, first + count) of `step` (their queries start at
// query row `first_query`), with the batched op or the reference.
void run(Step& step, size_t first, size_t count, bool reference, GuardedOutput& out) {
  CpuBackend cpu;
  std::vector<PlannedSequence> planned;
  int64_t first_query = 0, num_queries = 0;
  for (size_t s = 0; s < first; ++s) first_query += step.sequences[s].num_queries;
  for (size_t s = first; s < first + count; ++s) {
    const Sequence& seq = step.sequences[s];
    planned.push_back({seq.num_queries, seq.context_len, seq.table});
    num_queries += seq.num_queries;
  }
  const StepAttentionPlan plan(cpu, planned, step.num_blocks, step.shape.block_size);
  const Shape& sh = step.shape;
  PagedAttentionParams p;
  p.q = Tensor::view(step.q.data() + first_query * step.row(), DType::f32,
                     {num_queries, sh.num_heads, sh.head_dim});
  p.k_blocks = step.pool(step.k_pool);
  p.v_blocks = step.pool(step.v_pool);
  if (!step.k_bf16.empty()) {
    p.k_blocks = Tensor::view(step.k_bf16.data(), DType::bf16, p.k_blocks.shape.data(), 4);
    p.v_blocks = Tensor::view(step.v_bf16.data(), DType::bf16, p.v_blocks.shape.data(), 4);
  }
  if (is_kv_quantized(step.quantized)) {
    const int64_t row = kv_row_elems(step.quantized, sh.head_dim);
    p.k_blocks = Tensor::view(step.k_rows.data(), step.quantized,
                              {step.num_blocks, sh.block_size, sh.num_kv_heads, row});
    p.v_blocks = Tensor::view(step.v_rows.data(), step.quantized,
                              {step.num_blocks, sh.block_size, sh.num_kv_heads, row});
  }
  p.out = Tensor::view(out.data(), DType::f32, {num_queries, sh.num_heads, sh.head_dim});
  p.plan = plan.plan();
  p.scale = 1.0f / std::sqrt(static_cast<float>(sh.head_dim));
  p.sliding_window = sh.sliding_window;
  if (reference) {
    cpu::paged_attention_reference(p);
  } else {
    cpu.paged_attention(p);
  }
}

class BatchedPagedAttention : public ::testing::Test {
 private:
  test::KeptCpuSettings kept_;
};

TEST_F(BatchedPagedAttention, MatchesThePerSequenceReferenceOnRandomSteps) {
  std::mt19937_64 rng(test::test_seed());
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  int64_t cases = 0;
  for (const int64_t group : {1, 2, 4})
    for (const int64_t head_dim : {64, 128})
      for (const int64_t block_size : {1, 16})
        for (const int64_t window : {0, 37})
          for (int repeat = 0; repeat < 2; ++repeat) {
            const int64_t kv_heads = group == 4 ? 2 : 3 - repeat;
            Step step =
                random_step(rng, {kv_heads * group, kv_heads, head_dim, block_size, window});
            SCOPED_TRACE(testing::Message() << step);
            GuardedOutput expected(step.num_tokens, step.row()), got(step.num_tokens, step.row());
            run(step, 0, step.sequences.size(), true, expected);
            cpu::set_cpu_threads(2);
            run(step, 0, step.sequences.size(), false, got);
            ASSERT_TRUE(expected.intact());
            ASSERT_TRUE(got.intact());
            // Online softmax against two-pass: rounding only.
            EXPECT_LE(test::nmse(got.data(), expected.data(), got.size), 1e-11);
            ++cases;
          }
  std::printf("%ld random steps\n", static_cast<long>(cases));
}

// A bf16 cache is read by widening each value exactly, so both the batched
// op and the reference give the bits an f32 cache of the rounded values
// gives: bf16 KV changes only what is stored, never the arithmetic.
TEST_F(BatchedPagedAttention, Bf16CacheGivesTheBitsOfItsValuesInF32) {
  std::mt19937_64 rng(test::test_seed());
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  for (const int64_t group : {1, 4})
    for (const int64_t window : {0, 37}) {
      Step step = random_step(rng, {2 * group, 2, 64, 16, window});
      SCOPED_TRACE(testing::Message() << step);
      Step rounded = step;
      for (std::vector<float>* pool : {&rounded.k_pool, &rounded.v_pool})
        for (float& x : *pool) x = bf16_to_f32(f32_to_bf16(x));
      step.k_bf16 = test::to_half_bits(step.k_pool, DType::bf16);
      step.v_bf16 = test::to_half_bits(step.v_pool, DType::bf16);
      for (const bool reference : {false, true}) {
        GuardedOutput from_bf16(step.num_tokens, step.row()), from_f32(step.num_tokens, step.row());
        run(step, 0, step.sequences.size(), reference, from_bf16);
        run(rounded, 0, rounded.sequences.size(), reference, from_f32);
        ASSERT_TRUE(from_bf16.intact());
        ASSERT_EQ(std::memcmp(from_bf16.data(), from_f32.data(), from_f32.size * 4), 0)
            << (reference ? "reference" : "batched op") << ": bf16 cache differs";
      }
    }
}

// The pool's rows quantized as reshape_and_cache stores them; a row of NaN
// (a block no query may read) gets a NaN scale, so reading it shows.
std::vector<uint8_t> quantize_pool(const std::vector<float>& pool, int64_t head_dim, DType dtype) {
  const int64_t row = kv_row_elems(dtype, head_dim);
  const auto rows = static_cast<int64_t>(pool.size()) / head_dim;
  std::vector<uint8_t> out(static_cast<size_t>(rows * row));
  for (int64_t r = 0; r < rows; ++r) {
    quantize_kv_row(pool.data() + r * head_dim, head_dim, dtype, out.data() + r * row);
  }
  return out;
}

// `step` with its pools quantized as `dtype`, and (in dequantized) the f32
// pools of the values those rows hold.
Step quantized_step(const Step& step, DType dtype, Step& dequantized) {
  Step q = step;
  q.quantized = dtype;
  q.k_rows = quantize_pool(step.k_pool, step.shape.head_dim, dtype);
  q.v_rows = quantize_pool(step.v_pool, step.shape.head_dim, dtype);
  dequantized = step;
  const int64_t hd = step.shape.head_dim, row = kv_row_elems(dtype, hd);
  for (auto [rows, pool] :
       {std::pair{&q.k_rows, &dequantized.k_pool}, {&q.v_rows, &dequantized.v_pool}})
    for (size_t r = 0; r < pool->size() / static_cast<size_t>(hd); ++r)
      dequantize_kv_row(rows->data() + r * static_cast<size_t>(row), hd, dtype,
                        pool->data() + r * static_cast<size_t>(hd));
  return q;
}

// A quantized cache is dequantized as read (code times scale, one f32
// product), so both the batched op and the reference give the bits an f32
// cache of the dequantized values gives.
TEST_F(BatchedPagedAttention, QuantizedCacheGivesTheBitsOfItsDequantizedValues) {
  std::mt19937_64 rng(test::test_seed());
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  for (const DType dtype : {DType::i8, DType::f8_e4m3})
    for (const int64_t group : {1, 4})
      for (const int64_t head_dim : {64, 128})
        for (const int64_t window : {0, 37}) {
          const Step step = random_step(rng, {2 * group, 2, head_dim, 16, window});
          SCOPED_TRACE(testing::Message() << dtype_name(dtype) << " " << step);
          Step dequantized;
          Step quantized = quantized_step(step, dtype, dequantized);
          for (const bool reference : {false, true}) {
            GuardedOutput from_rows(step.num_tokens, step.row()),
                from_f32(step.num_tokens, step.row());
            run(quantized, 0, quantized.sequences.size(), reference, from_rows);
            run(dequantized, 0, dequantized.sequences.size(), reference, from_f32);
            ASSERT_TRUE(from_rows.intact());
            ASSERT_EQ(std::memcmp(from_rows.data(), from_f32.data(), from_f32.size * 4), 0)
                << (reference ? "reference" : "batched op") << ": quantized cache differs";
          }
        }
}

// Against the unquantized f32 cache (the reference on it), on values drawn
// from a normal distribution: the NMSE of the output stays under a bound
// per dtype (int8: absmax/127 steps; e4m3: 3 mantissa bits).
TEST_F(BatchedPagedAttention, QuantizedCacheIsCloseToTheF32Cache) {
  std::mt19937_64 rng(test::test_seed());
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  for (const auto& [dtype, bound] : {std::pair{DType::i8, 2e-4}, {DType::f8_e4m3, 4e-3}}) {
    double worst = 0;
    for (const int64_t group : {1, 4})
      for (const int64_t window : {0, 37}) {
        const Step step = random_step(rng, {2 * group, 2, 128, 16, window});
        SCOPED_TRACE(testing::Message() << dtype_name(dtype) << " " << step);
        Step dequantized, exact = step;
        Step quantized = quantized_step(step, dtype, dequantized);
        GuardedOutput got(step.num_tokens, step.row()), expected(step.num_tokens, step.row());
        run(quantized, 0, quantized.sequences.size(), false, got);
        run(exact, 0, exact.sequences.size(), true, expected);
        ASSERT_TRUE(got.intact());
        const double error = test::nmse(got.data(), expected.data(), got.size);
        EXPECT_LE(error, bound);
        EXPECT_GT(error, 1e-9) << "no quantization error: was the cache quantized?";
        worst = std::max(worst, error);
      }
    std::printf("%s cache: worst output NMSE %.3g (bound %.0e)\n",
                std::string(dtype_name(dtype)).c_str(), worst, bound);
  }
}

// The invariants, bit for bit: 1 and 2 threads, each sequence alone and in
// the batch, and the step's prompts split into two chunks each.
void expect_same_bits_every_way(Step& step) {
  const size_t num_seqs = step.sequences.size();
  GuardedOutput one_thread(step.num_tokens, step.row()), two(step.num_tokens, step.row());
  cpu::set_cpu_threads(1);
  run(step, 0, num_seqs, false, one_thread);
  cpu::set_cpu_threads(2);
  run(step, 0, num_seqs, false, two);
  ASSERT_TRUE(one_thread.intact());
  ASSERT_TRUE(two.intact());
  ASSERT_EQ(std::memcmp(one_thread.data(), two.data(), two.size * 4), 0)
      << "1 and 2 threads differ";
  int64_t offset = 0;
  for (size_t s = 0; s < num_seqs; ++s) {
    const int64_t rows = step.sequences[s].num_queries;
    GuardedOutput alone(rows, step.row());
    run(step, s, 1, false, alone);
    ASSERT_TRUE(alone.intact());
    ASSERT_EQ(std::memcmp(alone.data(), two.data() + offset * step.row(),
                          static_cast<size_t>(rows * step.row()) * 4),
              0)
        << "sequence " << s << " alone differs from the batch";
    offset += rows;
  }
  // The whole step's queries as two chunks of each sequence: the first
  // chunk sees a shorter context, as in an earlier step.
  Step chunked = step;
  chunked.sequences.clear();
  for (const Sequence& s : step.sequences) {
    const int64_t head = s.num_queries / 2;
    if (head > 0)
      chunked.sequences.push_back({head, s.context_len - (s.num_queries - head), s.table});
    chunked.sequences.push_back({s.num_queries - head, s.context_len, s.table});
  }
  GuardedOutput split(step.num_tokens, step.row());
  run(chunked, 0, chunked.sequences.size(), false, split);
  ASSERT_TRUE(split.intact());
  ASSERT_EQ(std::memcmp(split.data(), two.data(), two.size * 4), 0)
      << "chunked prefill differs from one chunk";
}

TEST_F(BatchedPagedAttention, SameBitsAloneBatchedChunkedAndOnAnyThreadCount) {
  std::mt19937_64 rng(test::test_seed());
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  for (const int64_t group : {1, 2, 4})
    for (const int64_t block_size : {1, 16})
      for (const int64_t window : {0, 37}) {
        Step step = random_step(rng, {2 * group, 2, 64, block_size, window});
        SCOPED_TRACE(testing::Message() << step);
        expect_same_bits_every_way(step);
      }
}

TEST_F(BatchedPagedAttention, QuantizedCachesKeepTheInvariants) {
  std::mt19937_64 rng(test::test_seed());
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  for (const DType dtype : {DType::i8, DType::f8_e4m3})
    for (const int64_t group : {1, 4})
      for (const int64_t window : {0, 37}) {
        Step dequantized;
        Step step =
            quantized_step(random_step(rng, {2 * group, 2, 64, 16, window}), dtype, dequantized);
        SCOPED_TRACE(testing::Message() << dtype_name(dtype) << " " << step);
        expect_same_bits_every_way(step);
      }
}

// The bf16 mode (cpu_features.hpp) on a bf16 cache: add_tile_bf16's
// vdpbf16ps products (on the amx path AMX tiles), q and the softmax weights
// rounded to bf16. Within the rounding of the reference, and the same
// invariants bit for bit; head_dim 32, 64 and 128 take each of its value
// loops, groups of 1-8 heads blocks of 16 rows with a partial last one.
TEST_F(BatchedPagedAttention, Bf16ModeIsCloseAndKeepsTheInvariants) {
  HIVE_SKIP_WITHOUT_CPU_PATH(cpu::CpuPath::avx512_bf16);
  std::mt19937_64 rng(test::test_seed());
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  cpu::set_matmul_precision(cpu::MatmulPrecision::bf16);
  for (const cpu::CpuPath path : {cpu::CpuPath::avx512_bf16, cpu::CpuPath::amx}) {
    if (path > cpu::best_cpu_path()) continue;
    cpu::set_cpu_kernel_path(path);
    SCOPED_TRACE(cpu::cpu_path_name(path));
    // Over the whole path, not per step: a step whose every query sees one
    // key gives that key's bf16 value exactly, whatever q's rounding.
    double largest_error = 0;
    for (const int64_t group : {1, 2, 4, 8})
      for (const int64_t head_dim : {32, 64, 128})
        for (const int64_t window : {0, 37}) {
          Step step = random_step(rng, {2 * group, 2, head_dim, 16, window});
          step.k_bf16 = test::to_half_bits(step.k_pool, DType::bf16);
          step.v_bf16 = test::to_half_bits(step.v_pool, DType::bf16);
          SCOPED_TRACE(testing::Message() << step);
          GuardedOutput expected(step.num_tokens, step.row()), got(step.num_tokens, step.row());
          run(step, 0, step.sequences.size(), true, expected);
          run(step, 0, step.sequences.size(), false, got);
          ASSERT_TRUE(got.intact());
          const double error = test::nmse(got.data(), expected.data(), got.size);
          EXPECT_LE(error, test::kBf16AttentionNmse);
          largest_error = std::max(largest_error, error);
          expect_same_bits_every_way(step);
        }
    EXPECT_GT(largest_error, 1e-11) << "the bf16 mode did not round: did it run?";
  }
}

TEST(AttentionPlan, ChecksEveryBlockIdOnce) {
  CpuBackend cpu;
  const std::vector<int32_t> good = {2, 1}, bad = {1, 5};
  const PlannedSequence ok{2, 3, good};
  const StepAttentionPlan plan(cpu, std::vector<PlannedSequence>{ok, ok}, 3, 2);
  EXPECT_EQ(plan.plan().num_seqs, 2);
  EXPECT_EQ(plan.plan().num_tokens, 4);
  EXPECT_EQ(plan.plan().query_key_pairs, 12);
  const auto error_of = [&](const PlannedSequence& s) -> std::string {
    try {
      StepAttentionPlan(cpu, std::vector<PlannedSequence>{ok, s}, 3, 2);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(error_of({1, 3, bad})
                .find("sequence 1: block table entry 1 is 5, expected a block id "
                      "in [0, 3)"),
            std::string::npos)
      << error_of({1, 3, bad});
  EXPECT_NE(error_of({1, 5, good}).find("context of 5 tokens"), std::string::npos)
      << error_of({1, 5, good});
  EXPECT_NE(error_of({4, 3, good}).find("4 queries"), std::string::npos);
}

TEST(AttentionPlan, TheOpRejectsAPlanForAnotherPool) {
  CpuBackend cpu;
  const std::vector<int32_t> table = {1};
  const StepAttentionPlan plan(cpu, std::vector<PlannedSequence>{{1, 2, table}}, 2, 2);
  std::vector<float> q(4, 1.0f), out(4), pool(3 * 2 * 4, 0.5f);
  PagedAttentionParams p;
  p.q = Tensor::view(q.data(), DType::f32, {1, 1, 4});
  p.out = Tensor::view(out.data(), DType::f32, {1, 1, 4});
  p.k_blocks = p.v_blocks = Tensor::view(pool.data(), DType::f32, {3, 2, 1, 4});
  p.plan = plan.plan();
  try {
    cpu.paged_attention(p);
    FAIL() << "expected an error for a pool of 3 blocks";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("checked against 2 blocks of 2"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace hive
