// Reference causal attention with GQA over a paged KV cache, one sequence
// per call (see SequencePagedAttentionParams), and the batched op's
// reference: a loop of it over a plan's sequences. The arithmetic is the
// contiguous reference's, in the same order; only the address of key/value
// j changes, so a query's output does not depend on which blocks hold its
// context or on what else runs.
//
// Moves: per (query, head), context_len key and value rows of head_dim f32
// (2 * context_len * head_dim * 4 bytes); decode is bound by those reads.
#include <algorithm>
#include <cmath>
#include <vector>

#include "base/error.hpp"
#include "kernels/cpu/attend.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/kv_quant.hpp"

namespace hive::cpu {

namespace {

void check_paged_shapes(const SequencePagedAttentionParams& p) {
  expect(p.q, DType::f32, 3, "paged_attention q");
  expect(p.out, DType::f32, 3, "paged_attention out");
  expect_kv_cache(p.k_blocks, p.v_blocks, "paged_attention");
  expect(p.block_table, DType::i32, 1, "paged_attention block_table");
  const int64_t num_tokens = p.q.shape[0], num_heads = p.q.shape[1], head_dim = p.q.shape[2];
  const int64_t num_kv_heads = p.k_blocks.shape[2];
  check(num_kv_heads > 0 && num_heads % num_kv_heads == 0 &&
            p.k_blocks.shape[3] == kv_row_elems(p.k_blocks.dtype, head_dim) &&
            p.v_blocks.shape == p.k_blocks.shape && p.out.shape[0] == num_tokens &&
            p.out.shape[1] == num_heads && p.out.shape[2] == head_dim,
        "paged_attention: q ", p.q.shape_text(), ", k ", p.k_blocks.shape_text(), ", v ",
        p.v_blocks.shape_text(), ", out ", p.out.shape_text(), " disagree");
  const int64_t context_len = p.start_position + num_tokens;
  const int64_t block_size = p.k_blocks.shape[1];
  check(p.start_position >= 0 && context_len <= p.block_table.shape[0] * block_size,
        "paged_attention: context of ", context_len, " tokens exceeds the ", p.block_table.shape[0],
        " blocks of ", block_size, " in the block table");
  const int32_t* table = p.block_table.as<int32_t>();
  const int64_t num_blocks = p.k_blocks.shape[0];
  for (int64_t b = 0; b < p.block_table.shape[0]; ++b)
    check(table[b] >= 0 && table[b] < num_blocks, "paged_attention: block table entry ", b, " is ",
          table[b], ", expected a block id in [0, ", num_blocks, ")");
}

}  // namespace

void paged_attention_sequence(const SequencePagedAttentionParams& p) {
  check_paged_shapes(p);
  const int64_t num_tokens = p.q.shape[0], num_heads = p.q.shape[1], head_dim = p.q.shape[2];
  const int64_t block_size = p.k_blocks.shape[1], num_kv_heads = p.k_blocks.shape[2];
  const int64_t context_len = p.start_position + num_tokens;
  const int64_t group = num_heads / num_kv_heads;
  const int32_t* table = p.block_table.as<int32_t>();
  const float* q = p.q.as<float>();
  float* out = p.out.as<float>();
  const int64_t row_stride = p.k_blocks.shape[3];  // head_dim, or a quantized row's codes + scale
  // Offset of (position j, kv head) in the block pool.
  const auto row = [&](int64_t j, int64_t kvh) {
    const int64_t slot = int64_t{table[j / block_size]} * block_size + j % block_size;
    return (slot * num_kv_heads + kvh) * row_stride;
  };
  const auto run = [&](const auto* k, const auto* v) {
    for_each_task(
        num_tokens * num_heads, num_tokens * num_heads * context_len * head_dim,
        [&] { return std::vector<float>(static_cast<size_t>(context_len)); },
        [&](int64_t task, std::vector<float>& scores) {
          const int64_t i = task / num_heads, h = task % num_heads, kvh = h / group;
          attend(
              q + (i * num_heads + h) * head_dim, k, v, p.start_position + i, p.sliding_window,
              head_dim, p.scale, [&](int64_t j) { return row(j, kvh); }, scores,
              out + (i * num_heads + h) * head_dim);
        });
  };
  if (is_kv_quantized(p.k_blocks.dtype))
    for_each_task(
        num_tokens * num_heads, num_tokens * num_heads * context_len * head_dim,
        [&] { return std::vector<float>(static_cast<size_t>(context_len)); },
        [&](int64_t task, std::vector<float>& scores) {
          const int64_t i = task / num_heads, h = task % num_heads, kvh = h / group;
          attend_quantized(
              q + (i * num_heads + h) * head_dim, p.k_blocks.as<uint8_t>(),
              p.v_blocks.as<uint8_t>(), p.k_blocks.dtype, p.start_position + i, p.sliding_window,
              head_dim, p.scale, [&](int64_t j) { return row(j, kvh); }, scores,
              out + (i * num_heads + h) * head_dim);
        });
  else if (p.k_blocks.dtype == DType::bf16)
    run(p.k_blocks.as<uint16_t>(), p.v_blocks.as<uint16_t>());
  else
    run(p.k_blocks.as<float>(), p.v_blocks.as<float>());
}

void paged_attention_reference(const PagedAttentionParams& p) {
  const AttentionPlan& plan = p.plan;
  check(plan.query_start.device == Device::cpu && plan.num_tokens == p.q.shape[0],
        "paged_attention_reference: a host plan of ", plan.num_tokens, " queries for q ",
        p.q.shape_text());
  const int32_t* query_start = plan.query_start.as<int32_t>();
  const int32_t* context_lens = plan.context_lens.as<int32_t>();
  const int32_t* table_start = plan.table_start.as<int32_t>();
  for (int64_t s = 0; s < plan.num_seqs; ++s) {
    const int64_t first = query_start[s], count = query_start[s + 1] - first;
    SequencePagedAttentionParams seq;
    seq.q = p.q.rows(first, count);
    seq.k_blocks = p.k_blocks;
    seq.v_blocks = p.v_blocks;
    seq.block_table = plan.block_tables.rows(table_start[s], table_start[s + 1] - table_start[s]);
    seq.out = p.out.rows(first, count);
    seq.start_position = context_lens[s] - count;
    seq.scale = p.scale;
    seq.sliding_window = p.sliding_window;
    paged_attention_sequence(seq);
  }
}

}  // namespace hive::cpu
