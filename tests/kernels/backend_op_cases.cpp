// The table of the test-backend-ops harness: every Op with the shapes and
// dtypes it is tested at. Shapes cover one row (decode), odd sizes (no
// multiple of a SIMD width) and sizes past one tile or block; weights come in
// every dtype a checkpoint stores; paged attention reads f32, bf16 and
// quantized (int8, fp8) KV caches. Tolerances are NMSE against the CPU
// reference: 1e-10 where a backend should agree to f32 rounding, looser only
// where the fast kernel sums in another order over many terms.
#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include "kernels/kv_quant.hpp"
#include "kernels/step_attention_plan.hpp"
#include "tests/kernels/op_harness.hpp"

namespace hive::test {

namespace {

constexpr double kExact = 1e-10;  // f32 rounding of the same sums
constexpr double kReordered = 1e-9;

std::vector<int32_t> random_ints(std::mt19937_64& rng, size_t n, int32_t below) {
  std::uniform_int_distribution<int32_t> dist(0, below - 1);
  std::vector<int32_t> values(n);
  for (int32_t& v : values) v = dist(rng);
  return values;
}

std::string text(DType dtype, const std::string& rest) {
  return std::string(dtype_name(dtype)) + " " + rest;
}

void add_elementwise(std::vector<OpCase>& cases) {
  for (auto [rows, dim] : {std::pair{1, 64}, {7, 1000}, {33, 4096}}) {
    const std::string shape = "rows=" + std::to_string(rows) + " dim=" + std::to_string(dim);
    cases.push_back({Op::add, shape, kExact, [=](OpRun& r) {
                       const Tensor a = r.input(DType::f32, {rows, dim});
                       const Tensor b = r.input(DType::f32, {rows, dim});
                       r.backend().add(a, b, r.output(DType::f32, {rows, dim}));
                     }});
    cases.push_back({Op::mul_rows, shape, kExact, [=](OpRun& r) {
                       const Tensor scale = r.input(DType::f32, {rows});
                       r.backend().mul_rows(r.inout(DType::f32, {rows, dim}), scale);
                     }});
    cases.push_back({Op::silu_mul, shape, kExact, [=](OpRun& r) {
                       const Tensor gate = r.input(DType::f32, {rows, dim}, 3.0f);
                       const Tensor up = r.input(DType::f32, {rows, dim});
                       r.backend().silu_mul(gate, up, r.output(DType::f32, {rows, dim}));
                     }});
    cases.push_back({Op::sigmoid, shape, kExact, [=](OpRun& r) {
                       r.backend().sigmoid(r.inout(DType::f32, {rows, dim}, 4.0f));
                     }});
    cases.push_back({Op::softmax, shape, kExact, [=](OpRun& r) {
                       r.backend().softmax(r.inout(DType::f32, {rows, dim}, 4.0f));
                     }});
    cases.push_back({Op::normalize_rows, shape, kExact, [=](OpRun& r) {
                       r.backend().normalize_rows(r.inout_uniform({rows, dim}, 0.01f, 1.0f));
                     }});
    for (DType dtype : {DType::f32, DType::bf16, DType::f16})
      cases.push_back({Op::rms_norm, text(dtype, shape), kExact, [=](OpRun& r) {
                         const Tensor x = r.input(DType::f32, {rows, dim}, 2.0f);
                         const Tensor w = r.input(dtype, {dim});
                         r.backend().rms_norm(x, w, 1e-6f, r.output(DType::f32, {rows, dim}));
                       }});
  }
}

void add_matmul(std::vector<OpCase>& cases) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    for (auto [m, n, k, bias] : {std::tuple{1, 64, 128, false},
                                 {3, 100, 257, true},
                                 {5, 256, 512, false},
                                 {33, 96, 1000, true}}) {
      const std::string params = text(dtype, "m=" + std::to_string(m) + " n=" + std::to_string(n) +
                                                 " k=" + std::to_string(k) + (bias ? " bias" : ""));
      cases.push_back(
          {Op::matmul, params, kReordered, [=](OpRun& r) {
             const Tensor x = r.input(DType::f32, {m, k});
             const Tensor w = r.input(dtype, {n, k});
             const Tensor b = r.input(dtype, {n});
             r.backend().matmul(x, w, bias ? &b : nullptr, r.output(DType::f32, {m, n}));
           }});
    }
  }
}

// Products of one x (gate and up; q, k and v, one with a bias) and of
// another (an expert's own rows), in one group.
void add_matmul_group(std::vector<OpCase>& cases) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f16})
    for (auto [m, k] : {std::pair{1, 128}, {7, 300}, {33, 64}})
      cases.push_back({Op::matmul_group,
                       text(dtype, "m=" + std::to_string(m) + " k=" + std::to_string(k) +
                                       " n=96,40+bias,17 m2=5"),
                       kReordered, [=](OpRun& r) {
                         const Tensor x = r.input(DType::f32, {m, k});
                         const Tensor other = r.input(DType::f32, {5, k});
                         const Tensor w1 = r.input(dtype, {96, k});
                         const Tensor w2 = r.input(dtype, {40, k});
                         const Tensor b2 = r.input(dtype, {40});
                         const Tensor w3 = r.input(dtype, {17, k});
                         const MatmulProblem problems[] = {
                             {x, w1, nullptr, r.output(DType::f32, {m, 96})},
                             {x, w2, &b2, r.output(DType::f32, {m, 40})},
                             {other, w3, nullptr, r.output(DType::f32, {5, 17})}};
                         r.backend().matmul_group(problems);
                       }});
}

void add_lookups(std::vector<OpCase>& cases) {
  for (DType dtype : {DType::f32, DType::bf16, DType::f16})
    cases.push_back({Op::embedding, text(dtype, "vocab=300 dim=96 ids=9"), kExact, [=](OpRun& r) {
                       const Tensor table = r.input(dtype, {300, 96});
                       const Tensor ids = r.ints(random_ints(r.rng(), 9, 300));
                       r.backend().embedding(table, ids, r.output(DType::f32, {9, 96}));
                     }});
  for (auto [tokens, heads, head_dim] : {std::tuple{1, 4, 64}, {9, 8, 128}}) {
    cases.push_back(
        {Op::rope,
         "tokens=" + std::to_string(tokens) + " heads=" + std::to_string(heads) +
             " head_dim=" + std::to_string(head_dim),
         kExact, [=](OpRun& r) {
           const Tensor positions = r.ints(random_ints(r.rng(), tokens, 4096));
           const Tensor inv_freq = r.uniform({head_dim / 2}, 1e-4f, 1.0f);
           r.backend().rope(r.inout(DType::f32, {tokens, heads, head_dim}), positions, inv_freq);
         }});
  }
  for (auto [rows, cols, k] : {std::tuple{1, 8, 2}, {13, 64, 6}})
    cases.push_back(
        {Op::topk,
         "rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) +
             " k=" + std::to_string(k),
         kExact, [=](OpRun& r) {
           const Tensor x = r.input(DType::f32, {rows, cols});
           r.backend().topk(x, k, r.output(DType::f32, {rows, k}), r.output(DType::i32, {rows, k}));
         }});
  cases.push_back({Op::gather_rows, "src=40x96 rows=17", kExact, [](OpRun& r) {
                     const Tensor src = r.input(DType::f32, {40, 96});
                     const Tensor index = r.ints(random_ints(r.rng(), 17, 40));
                     r.backend().gather_rows(src, index, r.output(DType::f32, {17, 96}));
                   }});
  // Indices repeat: several rows add into one output row.
  cases.push_back(
      {Op::scatter_add_rows, "src=23x96 out=10x96", kReordered, [](OpRun& r) {
         const Tensor src = r.input(DType::f32, {23, 96});
         const Tensor index = r.ints(random_ints(r.rng(), 23, 10));
         const Tensor weight = r.uniform({23}, 0.0f, 1.0f);
         r.backend().scatter_add_rows(src, index, weight, r.inout(DType::f32, {10, 96}));
       }});
}

void add_attention(std::vector<OpCase>& cases) {
  // The contiguous op: 5 queries at positions 40..44 over 45 cached keys.
  for (auto [heads, kv_heads, window] : {std::tuple{8, 2, 0}, {4, 4, 16}})
    cases.push_back({Op::attention,
                     "heads=" + std::to_string(heads) + " kv_heads=" + std::to_string(kv_heads) +
                         " head_dim=64 queries=5 context=45 window=" + std::to_string(window),
                     kExact, [=](OpRun& r) {
                       AttentionParams p;
                       p.q = r.input(DType::f32, {5, heads, 64});
                       p.k_cache = r.input(DType::f32, {48, kv_heads, 64});
                       p.v_cache = r.input(DType::f32, {48, kv_heads, 64});
                       p.out = r.output(DType::f32, {5, heads, 64});
                       p.start_position = 40;
                       p.scale = 0.125f;
                       p.sliding_window = window;
                       r.backend().attention(p);
                     }});
  // One step of three sequences: a decode, a prefill chunk, a whole prompt.
  for (auto [heads, kv_heads, head_dim, block_size, window, dtype] :
       {std::tuple{8, 4, 64, 16, 0, DType::f32},
        {8, 2, 128, 1, 0, DType::f32},
        {4, 4, 64, 16, 20, DType::f32},
        {8, 4, 64, 16, 0, DType::bf16},
        {8, 2, 128, 1, 0, DType::bf16},
        {4, 4, 64, 16, 20, DType::bf16},
        {8, 4, 64, 16, 0, DType::i8},
        {8, 2, 128, 1, 0, DType::i8},
        {4, 4, 64, 16, 20, DType::f8_e4m3},
        {8, 2, 128, 16, 0, DType::f8_e4m3}}) {
    const std::string params =
        std::string(dtype_name(dtype)) + " cache " + "heads=" + std::to_string(heads) +
        " kv_heads=" + std::to_string(kv_heads) + " head_dim=" + std::to_string(head_dim) +
        " block_size=" + std::to_string(block_size) + " window=" + std::to_string(window) +
        " queries=1,9,25 contexts=77,40,25";
    cases.push_back(
        {Op::paged_attention, params, kReordered, [=](OpRun& r) {
           const int64_t contexts[] = {77, 40, 25}, queries[] = {1, 9, 25};
           std::vector<std::vector<int32_t>> tables(3);
           int32_t next_block = 1;
           for (int s = 0; s < 3; ++s)
             for (int64_t b = 0; b < (contexts[s] + block_size - 1) / block_size; ++b)
               tables[static_cast<size_t>(s)].push_back(next_block++);
           std::vector<PlannedSequence> sequences;
           for (int s = 0; s < 3; ++s)
             sequences.push_back({queries[s], contexts[s], tables[static_cast<size_t>(s)]});
           const StepAttentionPlan plan(r.backend(), sequences, next_block, block_size);
           PagedAttentionParams p;
           p.q = r.input(DType::f32, {35, heads, head_dim});
           p.k_blocks = is_kv_quantized(dtype)
                            ? r.kv_rows(dtype, {next_block, block_size, kv_heads, head_dim})
                            : r.input(dtype, {next_block, block_size, kv_heads, head_dim});
           p.v_blocks = is_kv_quantized(dtype)
                            ? r.kv_rows(dtype, {next_block, block_size, kv_heads, head_dim})
                            : r.input(dtype, {next_block, block_size, kv_heads, head_dim});
           p.out = r.output(DType::f32, {35, heads, head_dim});
           p.plan = plan.plan();
           p.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
           p.sliding_window = window;
           r.backend().paged_attention(p);
         }});
  }
}

// Decode steps (one query per sequence) at GQA ratios 1, 4 and 8, short
// contexts and long ones that the CPU kernel splits over the context.
void add_decode_attention(std::vector<OpCase>& cases) {
  for (DType dtype : {DType::f32, DType::bf16, DType::i8, DType::f8_e4m3})
    for (int64_t group : {1, 4, 8}) {
      constexpr int64_t kv_heads = 2, head_dim = 128, block_size = 16;
      const int64_t heads = kv_heads * group;
      cases.push_back(
          {Op::paged_attention,
           text(dtype, "cache decode heads=" + std::to_string(heads) + " kv_heads=2 head_dim=128 " +
                           "block_size=16 contexts=33,4096,5000"),
           kReordered, [=](OpRun& r) {
             const int64_t contexts[] = {33, 4096, 5000};
             std::vector<std::vector<int32_t>> tables(3);
             int32_t next_block = 0;
             for (int s = 0; s < 3; ++s)
               for (int64_t b = 0; b < (contexts[s] + block_size - 1) / block_size; ++b)
                 tables[static_cast<size_t>(s)].push_back(next_block++);
             for (auto& table : tables) std::shuffle(table.begin(), table.end(), r.rng());
             std::vector<PlannedSequence> sequences;
             for (int s = 0; s < 3; ++s)
               sequences.push_back({1, contexts[s], tables[static_cast<size_t>(s)]});
             const StepAttentionPlan plan(r.backend(), sequences, next_block, block_size);
             PagedAttentionParams p;
             p.q = r.input(DType::f32, {3, heads, head_dim});
             p.k_blocks = is_kv_quantized(dtype)
                              ? r.kv_rows(dtype, {next_block, block_size, kv_heads, head_dim})
                              : r.input(dtype, {next_block, block_size, kv_heads, head_dim});
             p.v_blocks = is_kv_quantized(dtype)
                              ? r.kv_rows(dtype, {next_block, block_size, kv_heads, head_dim})
                              : r.input(dtype, {next_block, block_size, kv_heads, head_dim});
             p.out = r.output(DType::f32, {3, heads, head_dim});
             p.plan = plan.plan();
             p.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
             r.backend().paged_attention(p);
           }});
    }
}

void add_cache_writes(std::vector<OpCase>& cases) {
  // Tokens land on distinct random slots of the pool; every other slot keeps
  // its random start value, which the comparison covers too.
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (auto [tokens, num_blocks, block_size, kv_heads, head_dim] :
         {std::tuple{1, 4, 16, 2, 64}, {37, 9, 8, 4, 128}, {5, 40, 1, 1, 96}}) {
      const std::string params = text(
          dtype, "tokens=" + std::to_string(tokens) + " blocks=" + std::to_string(num_blocks) +
                     "x" + std::to_string(block_size) + " kv_heads=" + std::to_string(kv_heads) +
                     " head_dim=" + std::to_string(head_dim));
      cases.push_back(
          {Op::reshape_and_cache, params, kExact, [=](OpRun& r) {
             std::vector<int64_t> slots(static_cast<size_t>(num_blocks * block_size));
             for (size_t i = 0; i < slots.size(); ++i) slots[i] = static_cast<int64_t>(i);
             std::shuffle(slots.begin(), slots.end(), r.rng());
             slots.resize(static_cast<size_t>(tokens));
             const Tensor k = r.input(DType::f32, {tokens, kv_heads, head_dim});
             const Tensor v = r.input(DType::f32, {tokens, kv_heads, head_dim});
             const Tensor slot_mapping = r.ints(slots);
             const Tensor k_blocks = r.inout(dtype, {num_blocks, block_size, kv_heads, head_dim});
             const Tensor v_blocks = r.inout(dtype, {num_blocks, block_size, kv_heads, head_dim});
             r.backend().reshape_and_cache(k, v, slot_mapping, k_blocks, v_blocks);
           }});
    }
  }
  for (auto [rows, dim, value] : {std::tuple{1, 7, 0.0f}, {33, 1000, 0.0f}, {5, 64, -2.5f}})
    cases.push_back({Op::fill,
                     "rows=" + std::to_string(rows) + " dim=" + std::to_string(dim) +
                         " value=" + std::to_string(value),
                     kExact, [=](OpRun& r) {
                       r.backend().fill(r.inout(DType::f32, {rows, dim}), value);
                     }});
}

}  // namespace

std::vector<OpCase> backend_op_cases() {
  std::vector<OpCase> cases;
  add_elementwise(cases);
  add_matmul(cases);
  add_matmul_group(cases);
  add_lookups(cases);
  add_attention(cases);
  add_decode_attention(cases);
  add_cache_writes(cases);
  return cases;
}

}  // namespace hive::test
