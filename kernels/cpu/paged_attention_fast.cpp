// Batched varlen paged attention (PagedAttentionParams): one call for all of
// a step's sequences. Work items are (sequence, block of up to kQueryBlock of
// its queries, KV head): an item reads its KV head's rows once for all the
// query heads of the GQA group and all its queries (a decode step's item is
// one query and reads the head's context exactly once).
//
// Each (query, head) runs an online softmax (f32) over key tiles of
// kKeyTile positions aligned at multiples of kKeyTile: scores of the tile,
// the running maximum updated once per tile, then the weighted values added
// in position order. Tile edges are absolute positions, so a query's bits
// depend only on its own q, keys and values, not on which queries share its
// item, which sequences share the step, or the thread count. They differ
// from the reference's two-pass softmax (paged_attention.cpp) by rounding.
//
// K/V are f32 or bf16 (the default cache); bf16 rows are widened once per
// tile into scratch and the arithmetic stays f32.
//
// Moves: per item, its KV head's K and V rows of the context (2 *
// context_len * head_dim * 2 or 4 bytes), once for all its query heads and
// queries: a decode step reads the layer's KV cache once. Roofline: those
// bytes over the read bandwidth; per row and query head it does 2 * head_dim
// multiply-adds and one exp, so with few query heads per KV head it is
// compute-bound on 2 cores (docs/benchmarks.md).
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/error.hpp"

namespace hive::cpu {

namespace {

constexpr int64_t kKeyTile = 32;     // positions per softmax tile
constexpr int64_t kQueryBlock = 16;  // queries of one sequence per work item

struct Item {
  int64_t seq, first_query, num_queries;
};

// The op's inputs, unpacked once per call.
struct Layout {
  const float* q;
  const void* k;  // f32, or bf16 when kv_bf16
  const void* v;
  bool kv_bf16;
  float* out;
  const int32_t* query_start;
  const int32_t* context_lens;
  const int32_t* table_start;
  const int32_t* tables;
  int64_t num_heads, num_kv_heads, head_dim, group, block_size, sliding_window;
  float scale;
};

struct Scratch {
  std::vector<float> scores, acc, max, sum;
  std::vector<const float*> keys, values;
  std::vector<float> key_rows, value_rows;  // a bf16 tile's rows, widened once
};

void check_params(const PagedAttentionParams& p) {
  expect(p.q, DType::f32, 3, "paged_attention q");
  expect(p.out, DType::f32, 3, "paged_attention out");
  expect_kv_cache(p.k_blocks, p.v_blocks, "paged_attention");
  const AttentionPlan& plan = p.plan;
  expect(plan.query_start, DType::i32, 1, "paged_attention plan query_start");
  expect(plan.context_lens, DType::i32, 1, "paged_attention plan context_lens");
  expect(plan.table_start, DType::i32, 1, "paged_attention plan table_start");
  expect(plan.block_tables, DType::i32, 1, "paged_attention plan block_tables");
  const int64_t num_heads = p.q.shape[1], head_dim = p.q.shape[2];
  const int64_t num_kv_heads = p.k_blocks.shape[2];
  check(num_kv_heads > 0 && num_heads % num_kv_heads == 0 && p.k_blocks.shape[3] == head_dim &&
            p.v_blocks.shape == p.k_blocks.shape && p.out.shape == p.q.shape,
        "paged_attention: q ", p.q.shape_text(), ", k ", p.k_blocks.shape_text(), ", v ",
        p.v_blocks.shape_text(), ", out ", p.out.shape_text(), " disagree");
  check(plan.num_tokens == p.q.shape[0] && plan.query_start.shape[0] == plan.num_seqs + 1 &&
            plan.context_lens.shape[0] == plan.num_seqs &&
            plan.table_start.shape[0] == plan.num_seqs + 1,
        "paged_attention: a plan of ", plan.num_seqs, " sequences and ", plan.num_tokens,
        " queries for q ", p.q.shape_text());
  check(plan.num_blocks == p.k_blocks.shape[0] && plan.block_size == p.k_blocks.shape[1],
        "paged_attention: the plan was checked against ", plan.num_blocks, " blocks of ",
        plan.block_size, ", the pool is ", p.k_blocks.shape_text());
}

// q . k in 16 lanes folded 8/4/2/1, as dot() sums, but inlined into the
// caller's clone: one call per key and head cost more than its arithmetic.
inline __attribute__((always_inline)) float dot_row(const float* q, const float* k, int64_t n) {
  constexpr int kLanes = 16;
  float partial[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int lane = 0; lane < kLanes; ++lane) partial[lane] += q[i + lane] * k[i + lane];
  for (int lane = 0; i < n; ++i, ++lane) partial[lane] += q[i] * k[i];
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int lane = 0; lane < width; ++lane) partial[lane] += partial[lane + width];
  return partial[0];
}

// Folds key tile [tile_begin, tile_end) into the state of the (query, head)
// pairs of `item` whose queries see part of it.
inline __attribute__((always_inline)) void add_tile(const Layout& l, const Item& item, int64_t kvh,
                                                    int64_t tile_begin, int64_t tile_end,
                                                    Scratch& s) {
  const int64_t context_len = l.context_lens[item.seq];
  const int64_t first_position =
      context_len - (l.query_start[item.seq + 1] - l.query_start[item.seq]);
  const int32_t* table = l.tables + l.table_start[item.seq];
  const int64_t hd = l.head_dim;
  for (int64_t i = 0; i < item.num_queries; ++i) {
    const int64_t last = first_position + item.first_query + i;
    const int64_t first =
        l.sliding_window > 0 ? std::max<int64_t>(0, last - l.sliding_window + 1) : 0;
    const int64_t lo = std::max(first, tile_begin), hi = std::min(last + 1, tile_end);
    if (lo >= hi) continue;
    for (int64_t j = lo; j < hi; ++j) {
      if (s.keys[static_cast<size_t>(j - tile_begin)] != nullptr) continue;
      const int64_t slot = int64_t{table[j / l.block_size]} * l.block_size + j % l.block_size;
      const int64_t offset = (slot * l.num_kv_heads + kvh) * hd;
      const auto at = static_cast<size_t>(j - tile_begin);
      if (l.kv_bf16) {
        // Widened once per tile for all queries and heads of the item; exact,
        // so the bits are those of an f32 cache holding the rounded values.
        float* key_row = s.key_rows.data() + (j - tile_begin) * hd;
        float* value_row = s.value_rows.data() + (j - tile_begin) * hd;
        const uint16_t* k = static_cast<const uint16_t*>(l.k) + offset;
        const uint16_t* v = static_cast<const uint16_t*>(l.v) + offset;
        for (int64_t d = 0; d < hd; ++d) key_row[d] = bf16_to_f32(k[d]);
        for (int64_t d = 0; d < hd; ++d) value_row[d] = bf16_to_f32(v[d]);
        s.keys[at] = key_row;
        s.values[at] = value_row;
      } else {
        s.keys[at] = static_cast<const float*>(l.k) + offset;
        s.values[at] = static_cast<const float*>(l.v) + offset;
      }
    }
    // Scores and softmax weights of every head of the group, then each value
    // row read once for all of them; each acc[d] still adds in position order.
    const int64_t token = l.query_start[item.seq] + item.first_query + i;
    for (int64_t g = 0; g < l.group; ++g) {
      const int64_t head = kvh * l.group + g, state = i * l.group + g;
      const float* q = l.q + (token * l.num_heads + head) * hd;
      float* scores = s.scores.data() + g * kKeyTile;
      float tile_max = -INFINITY;
      for (int64_t j = lo; j < hi; ++j) {
        scores[j - lo] = dot_row(q, s.keys[static_cast<size_t>(j - tile_begin)], hd) * l.scale;
        tile_max = std::max(tile_max, scores[j - lo]);
      }
      float& running_max = s.max[static_cast<size_t>(state)];
      const float new_max = std::max(running_max, tile_max);
      const float rescale = std::exp(running_max - new_max);  // 0 on the first tile
      float tile_sum = 0.0f;
      for (int64_t j = lo; j < hi; ++j) {
        scores[j - lo] = std::exp(scores[j - lo] - new_max);
        tile_sum += scores[j - lo];
      }
      float& sum = s.sum[static_cast<size_t>(state)];
      sum = sum * rescale + tile_sum;
      running_max = new_max;
      float* acc = s.acc.data() + state * hd;
      for (int64_t d = 0; d < hd; ++d) acc[d] *= rescale;
    }
    // Four value rows per pass over each accumulator (a quarter of its loads
    // and stores); the sum is still written in position order.
    float* acc = s.acc.data() + i * l.group * hd;
    const float* const* values = s.values.data() + (lo - tile_begin);
    int64_t j = lo;
    for (; j + 4 <= hi; j += 4, values += 4) {
      const float *v0 = values[0], *v1 = values[1], *v2 = values[2], *v3 = values[3];
      for (int64_t g = 0; g < l.group; ++g) {
        const float* w = s.scores.data() + g * kKeyTile + (j - lo);
        float* a = acc + g * hd;
        for (int64_t d = 0; d < hd; ++d)
          a[d] = a[d] + w[0] * v0[d] + w[1] * v1[d] + w[2] * v2[d] + w[3] * v3[d];
      }
    }
    for (; j < hi; ++j) {
      const float* v = s.values[static_cast<size_t>(j - tile_begin)];
      for (int64_t g = 0; g < l.group; ++g) {
        const float weight = s.scores[static_cast<size_t>(g * kKeyTile + j - lo)];
        float* a = acc + g * hd;
        for (int64_t d = 0; d < hd; ++d) a[d] += weight * v[d];
      }
    }
  }
}

// Built twice, for x86-64-v3 (AVX2, FMA) and the baseline, as dot() is: the
// loader picks one per machine, so a machine's bits never change with the
// batch. Not under ASan or TSan (see dot.cpp).
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void run_item(const Layout& l, const Item& item, int64_t kvh, Scratch& s) {
  const int64_t num_states = item.num_queries * l.group, hd = l.head_dim;
  std::fill_n(s.max.begin(), num_states, -INFINITY);
  std::fill_n(s.sum.begin(), num_states, 0.0f);
  std::fill_n(s.acc.begin(), num_states * hd, 0.0f);
  const int64_t context_len = l.context_lens[item.seq];
  const int64_t first_position =
      context_len - (l.query_start[item.seq + 1] - l.query_start[item.seq]) + item.first_query;
  const int64_t last_position = first_position + item.num_queries - 1;
  const int64_t first_seen =
      l.sliding_window > 0 ? std::max<int64_t>(0, first_position - l.sliding_window + 1) : 0;
  for (int64_t tile = first_seen / kKeyTile * kKeyTile; tile <= last_position; tile += kKeyTile) {
    std::fill(s.keys.begin(), s.keys.end(), nullptr);
    add_tile(l, item, kvh, tile, tile + kKeyTile, s);
  }
  for (int64_t i = 0; i < item.num_queries; ++i) {
    const int64_t token = l.query_start[item.seq] + item.first_query + i;
    for (int64_t g = 0; g < l.group; ++g) {
      const int64_t state = i * l.group + g;
      const float* acc = s.acc.data() + state * hd;
      const float sum = s.sum[static_cast<size_t>(state)];
      float* out = l.out + (token * l.num_heads + kvh * l.group + g) * hd;
      for (int64_t d = 0; d < hd; ++d) out[d] = acc[d] / sum;
    }
  }
}

}  // namespace

void paged_attention(const PagedAttentionParams& p) {
  check_params(p);
  const AttentionPlan& plan = p.plan;
  const int64_t num_heads = p.q.shape[1], head_dim = p.q.shape[2];
  const int64_t num_kv_heads = p.k_blocks.shape[2];
  const bool kv_bf16 = p.k_blocks.dtype == DType::bf16;
  const Layout layout{p.q.as<float>(),
                      p.k_blocks.data,
                      p.v_blocks.data,
                      kv_bf16,
                      p.out.as<float>(),
                      plan.query_start.as<int32_t>(),
                      plan.context_lens.as<int32_t>(),
                      plan.table_start.as<int32_t>(),
                      plan.block_tables.as<int32_t>(),
                      num_heads,
                      num_kv_heads,
                      head_dim,
                      num_heads / num_kv_heads,
                      p.k_blocks.shape[1],
                      p.sliding_window,
                      p.scale};
  std::vector<Item> items;
  for (int64_t s = 0; s < plan.num_seqs; ++s) {
    const int64_t n = layout.query_start[s + 1] - layout.query_start[s];
    for (int64_t first = 0; first < n; first += kQueryBlock)
      items.push_back({s, first, std::min(kQueryBlock, n - first)});
  }
  const auto num_items = static_cast<int64_t>(items.size());
  const int64_t states = kQueryBlock * layout.group;
  for_each_task(
      num_items * num_kv_heads, 2 * plan.query_key_pairs * num_heads * head_dim,
      [&] {
        return Scratch{std::vector<float>(kKeyTile * layout.group),
                       std::vector<float>(states * head_dim),
                       std::vector<float>(states),
                       std::vector<float>(states),
                       std::vector<const float*>(kKeyTile),
                       std::vector<const float*>(kKeyTile),
                       std::vector<float>(kv_bf16 ? kKeyTile * head_dim : 0),
                       std::vector<float>(kv_bf16 ? kKeyTile * head_dim : 0)};
      },
      [&](int64_t task, Scratch& scratch) {
        run_item(layout, items[static_cast<size_t>(task / num_kv_heads)], task % num_kv_heads,
                 scratch);
      });
}

}  // namespace hive::cpu
