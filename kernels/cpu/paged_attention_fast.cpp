// Batched varlen paged attention (PagedAttentionParams): one call for all of
// a step's sequences. Work items are (sequence, block of up to kQueryBlock of
// its queries, KV head): an item reads its KV head's rows once for all the
// query heads of the GQA group and all its queries (a decode step's item is
// one query and reads the head's context exactly once).
//
// Each (query, head) runs an online softmax (f32) over key tiles of
// kKeyTile positions aligned at multiples of kKeyTile: scores of the tile,
// the running maximum updated once per tile, then the weighted values added
// in position order. They differ from the reference's two-pass softmax
// (paged_attention.cpp) by rounding.
//
// Long contexts are split (flash-decoding): the context is cut into chunks
// of kContextChunk positions at multiples of it, each chunk's softmax state
// starts empty, and the chunks are folded in order by log-sum-exp. A decode
// item (one query) whose context spans several chunks runs each chunk as its
// own task and a second pass merges them, so one long sequence keeps every
// thread busy; an item of several queries folds its chunks on one thread.
// Either way the same chunks are folded the same way, and the chunk edges
// are absolute positions, chosen from nothing but the position: a query's
// bits depend only on its own q, keys and values, not on which queries share
// its item, which sequences share the step, or the thread count, and a
// prefill chunk gives the bits of decoding the same positions.
//
// K/V are f32, bf16 (the default cache) or quantized rows (i8 or f8_e4m3
// codes and a scale per row, kv_quant.hpp); bf16 and quantized rows are
// widened (dequantized) once per tile into scratch and the arithmetic stays
// f32, except in the bf16 mode (cpu_features.hpp), whose tiles multiply bf16
// pairs of a bf16 cache (add_tile_bf16, paged_attention_bf16.cpp).
//
// Moves: per item, its KV head's K and V rows of the context (2 *
// context_len * head_dim * 2 or 4 bytes), once for all its query heads and
// queries: a decode step reads the layer's KV cache once; a split adds
// (head_dim + 2) floats per chunk and query head, written and read once.
// Roofline: those bytes over the read bandwidth; per row and query head it
// does 2 * head_dim multiply-adds and one exp, so with few query heads per
// KV head it is compute-bound on 2 cores (docs/benchmarks.md).
#include <algorithm>
#include <cmath>
#include <vector>

#include "base/error.hpp"
#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/isa_clones.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/paged_attention_tile.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/kv_quant.hpp"

namespace hive::cpu {

namespace {

using paged::Item;
using paged::kKeyTile;
using paged::Layout;
using paged::positions;
using paged::Positions;
using paged::Scratch;

constexpr int64_t kQueryBlock = 16;  // queries of one sequence per work item

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
  check(num_kv_heads > 0 && num_heads % num_kv_heads == 0 &&
            p.k_blocks.shape[3] == kv_row_elems(p.k_blocks.dtype, head_dim) &&
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

// Asks for the first key tile of chunk [chunk_begin, chunk_end) of the
// item's context, the rows run_chunk reads first.
inline __attribute__((always_inline)) void prefetch_first_tile(const Layout& l, const Item& item,
                                                               int64_t kvh, int64_t chunk_begin,
                                                               int64_t chunk_end) {
  const Positions at = positions(l, item);
  const int64_t begin = std::max(chunk_begin, at.first_seen / kKeyTile * kKeyTile);
  paged::prefetch_rows(l, item, kvh, std::max(begin, at.first_seen),
                       std::min({begin + kKeyTile, chunk_end, at.last + 1}));
}

// The softmax state of chunk [chunk_begin, chunk_end) of the context for
// every (query, head) of the item, from empty, in s.max/sum/acc; tiles by
// add_tile, or by add_tile_bf16 in the bf16 mode.
template <bool Bf16>
inline __attribute__((always_inline)) void run_chunk(const Layout& l, const Item& item, int64_t kvh,
                                                     int64_t chunk_begin, int64_t chunk_end,
                                                     Scratch& s) {
  const int64_t num_states = item.num_queries * l.group;
  std::fill_n(s.max.begin(), num_states, -INFINITY);
  std::fill_n(s.sum.begin(), num_states, 0.0f);
  std::fill_n(s.acc.begin(), num_states * l.head_dim, 0.0f);
  const Positions at = positions(l, item);
  const int64_t begin = std::max(chunk_begin, at.first_seen / kKeyTile * kKeyTile);
  const int64_t end = std::min(chunk_end, at.last + 1);
  // The first tile's rows now (already asked for when the task before it
  // ran on this thread), every later tile's a tile ahead.
  prefetch_first_tile(l, item, kvh, chunk_begin, chunk_end);
  if constexpr (Bf16) paged::round_queries_bf16(l, item, kvh, s);
  for (int64_t tile = begin; tile < end; tile += kKeyTile) {
    paged::prefetch_rows(l, item, kvh, tile + kKeyTile, std::min(tile + 2 * kKeyTile, end));
    if constexpr (Bf16) {
      paged::add_tile_bf16(l, item, kvh, tile, tile + kKeyTile, s);
    } else {
      std::fill(s.keys.begin(), s.keys.end(), nullptr);
      paged::add_tile(l, item, kvh, tile, tile + kKeyTile, s);
    }
  }
  if constexpr (Bf16) paged::release_tiles(s);
}

// out = total_acc / total_sum for every (query, head) of the item.
inline __attribute__((always_inline)) void write_totals(const Layout& l, const Item& item,
                                                        int64_t kvh, const Scratch& s) {
  for (int64_t i = 0; i < item.num_queries; ++i) {
    const int64_t token = l.query_start[item.seq] + item.first_query + i;
    for (int64_t g = 0; g < l.group; ++g) {
      const int64_t state = i * l.group + g;
      const float* acc = s.total_acc.data() + state * l.head_dim;
      const float sum = s.total_sum[static_cast<size_t>(state)];
      float* out = l.out + (token * l.num_heads + kvh * l.group + g) * l.head_dim;
      for (int64_t d = 0; d < l.head_dim; ++d) out[d] = acc[d] / sum;
    }
  }
}

void reset_totals(int64_t num_states, Scratch& s) {
  std::fill_n(s.total_max.begin(), num_states, -INFINITY);
  std::fill_n(s.total_sum.begin(), num_states, 0.0f);
}

// Built for x86-64-v4, v3 (AVX2, FMA) and the baseline (isa_clones.hpp): a
// machine's bits never change with the batch.
#define HIVE_PAGED_CLONES HIVE_CLONES_UP_TO_V4

// A whole item on one thread: its chunks in order, each folded into the total.
template <bool Bf16>
inline __attribute__((always_inline)) void run_item_body(const Layout& l, const Item& item,
                                                         int64_t kvh, int64_t chunk, Scratch& s) {
  const int64_t num_states = item.num_queries * l.group;
  reset_totals(num_states, s);
  const Positions at = positions(l, item);
  for (int64_t c = at.first_seen / chunk; c <= at.last / chunk; ++c) {
    run_chunk<Bf16>(l, item, kvh, c * chunk, (c + 1) * chunk, s);
    for (int64_t state = 0; state < num_states; ++state) {
      const auto i = static_cast<size_t>(state);
      paged::fold(s.total_max[i], s.total_sum[i], s.total_acc.data() + state * l.head_dim, s.max[i],
                  s.sum[i], s.acc.data() + state * l.head_dim, l.head_dim);
    }
  }
  write_totals(l, item, kvh, s);
}

HIVE_PAGED_CLONES void run_item(const Layout& l, const Item& item, int64_t kvh, int64_t chunk,
                                Scratch& s) {
  run_item_body<false>(l, item, kvh, chunk, s);
}

// The bf16 mode's, built for its one target (HIVE_PAGED_BF16).
HIVE_PAGED_BF16 void run_item_bf16(const Layout& l, const Item& item, int64_t kvh, int64_t chunk,
                                   Scratch& s) {
  run_item_body<true>(l, item, kvh, chunk, s);
}

// One chunk of a one-query item, its state stored in `partial` (per head of
// the group: max, sum, acc[head_dim]) for merge_chunks.
template <bool Bf16>
inline __attribute__((always_inline)) void run_chunk_to_body(const Layout& l, const Item& item,
                                                             int64_t kvh, int64_t chunk_begin,
                                                             int64_t chunk_end, float* partial,
                                                             Scratch& s) {
  run_chunk<Bf16>(l, item, kvh, chunk_begin, chunk_end, s);
  for (int64_t g = 0; g < l.group; ++g) {
    float* state = partial + g * (l.head_dim + 2);
    state[0] = s.max[static_cast<size_t>(g)];
    state[1] = s.sum[static_cast<size_t>(g)];
    std::copy_n(s.acc.data() + g * l.head_dim, l.head_dim, state + 2);
  }
}

HIVE_PAGED_CLONES void run_chunk_to(const Layout& l, const Item& item, int64_t kvh,
                                    int64_t chunk_begin, int64_t chunk_end, float* partial,
                                    Scratch& s) {
  run_chunk_to_body<false>(l, item, kvh, chunk_begin, chunk_end, partial, s);
}

HIVE_PAGED_BF16 void run_chunk_to_bf16(const Layout& l, const Item& item, int64_t kvh,
                                       int64_t chunk_begin, int64_t chunk_end, float* partial,
                                       Scratch& s) {
  run_chunk_to_body<true>(l, item, kvh, chunk_begin, chunk_end, partial, s);
}

// Folds the stored chunks of a one-query item in order, as run_item does.
inline __attribute__((always_inline)) void merge_chunks_body(const Layout& l, const Item& item,
                                                             int64_t kvh, const float* partials,
                                                             int64_t num_chunks, int64_t stride,
                                                             Scratch& s) {
  reset_totals(l.group, s);
  for (int64_t c = 0; c < num_chunks; ++c)
    for (int64_t g = 0; g < l.group; ++g) {
      const float* state = partials + c * stride + g * (l.head_dim + 2);
      const auto i = static_cast<size_t>(g);
      paged::fold(s.total_max[i], s.total_sum[i], s.total_acc.data() + g * l.head_dim, state[0],
                  state[1], state + 2, l.head_dim);
    }
  write_totals(l, item, kvh, s);
}

HIVE_PAGED_CLONES void merge_chunks(const Layout& l, const Item& item, int64_t kvh,
                                    const float* partials, int64_t num_chunks, int64_t stride,
                                    Scratch& s) {
  merge_chunks_body(l, item, kvh, partials, num_chunks, stride, s);
}

HIVE_PAGED_BF16 void merge_chunks_bf16(const Layout& l, const Item& item, int64_t kvh,
                                       const float* partials, int64_t num_chunks, int64_t stride,
                                       Scratch& s) {
  merge_chunks_body(l, item, kvh, partials, num_chunks, stride, s);
}

// A one-query item whose context spans several chunks: its chunks run as
// separate tasks, their states at partials[(first_chunk_slot + c) *
// num_kv_heads + kvh].
struct SplitItem {
  size_t item;
  int64_t first_chunk, num_chunks, first_slot;
};

}  // namespace

void paged_attention(const PagedAttentionParams& p) {
  paged_attention_chunked(p, kContextChunk);
}

void paged_attention_chunked(const PagedAttentionParams& p, int64_t context_chunk) {
  check_params(p);
  check(context_chunk >= 0 && context_chunk % kKeyTile == 0, "paged_attention: context chunk of ",
        context_chunk, " positions, expected 0 (no split) ", "or a multiple of ", kKeyTile);
  const int64_t chunk = context_chunk == 0 ? int64_t{1} << 40 : context_chunk;
  const AttentionPlan& plan = p.plan;
  const int64_t num_heads = p.q.shape[1], head_dim = p.q.shape[2];
  const int64_t num_kv_heads = p.k_blocks.shape[2];
  const bool kv_bf16 = p.k_blocks.dtype == DType::bf16;
  // The bf16 mode's tiles (paged_attention_tile.hpp, add_tile_bf16) where
  // they apply: a bf16 cache, and head_dim in whole 64-byte rows of pairs.
  const bool bf16_tiles = kv_bf16 && bf16_matmul_active() && head_dim % 32 == 0 && head_dim <= 256;
  // On the amx path their products run as AMX tiles (add_tile_amx).
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
                      p.scale,
                      bf16_tiles && cpu_kernel_path() == CpuPath::amx,
                      p.k_blocks.dtype,
                      p.k_blocks.shape[3]};
  // Tasks: whole items (chunk index -1) and the chunks of split items.
  std::vector<Item> items;
  std::vector<SplitItem> splits;
  std::vector<std::pair<size_t, int64_t>> tasks;
  int64_t num_slots = 0;
  for (int64_t s = 0; s < plan.num_seqs; ++s) {
    const int64_t n = layout.query_start[s + 1] - layout.query_start[s];
    for (int64_t first = 0; first < n; first += kQueryBlock) {
      items.push_back({s, first, std::min(kQueryBlock, n - first)});
      const Positions at = positions(layout, items.back());
      const int64_t first_chunk = at.first_seen / chunk,
                    num_chunks = at.last / chunk + 1 - first_chunk;
      if (items.back().num_queries > 1 || num_chunks == 1) {
        tasks.push_back({items.size() - 1, -1});
        continue;
      }
      splits.push_back({items.size() - 1, first_chunk, num_chunks, num_slots});
      for (int64_t c = 0; c < num_chunks; ++c) tasks.push_back({splits.size() - 1, c});
      num_slots += num_chunks;
    }
  }
  const int64_t states = kQueryBlock * layout.group, stride = layout.group * (head_dim + 2);
  const auto make_scratch = [&] {
    const auto floats = [](int64_t n) { return std::vector<float>(static_cast<size_t>(n)); };
    Scratch s;
    s.scores = floats(kKeyTile * layout.group);
    s.acc = floats(states * head_dim);
    s.max = floats(states);
    s.sum = floats(states);
    s.keys.resize(kKeyTile);
    s.values.resize(kKeyTile);
    if ((kv_bf16 && !bf16_tiles) || is_kv_quantized(p.k_blocks.dtype)) {
      s.key_rows = floats(kKeyTile * head_dim);
      s.value_rows = floats(kKeyTile * head_dim);
    }
    s.total_acc = floats(states * head_dim);
    s.total_max = floats(states);
    s.total_sum = floats(states);
    if (bf16_tiles) paged::bf16_pairs_scratch(states, head_dim, s);
    return s;
  };
  // Reused across calls and layers; the pool's threads write through the
  // pointer (a thread_local named in the lambdas would be their own).
  thread_local std::vector<float> partial_buffer;
  partial_buffer.resize(static_cast<size_t>(num_slots * num_kv_heads * stride));
  float* const partials = partial_buffer.data();
  const int64_t work = 2 * plan.query_key_pairs * num_heads * head_dim;
  const int64_t num_tasks = static_cast<int64_t>(tasks.size()) * num_kv_heads;
  // What task t computes: a whole item (split null) from its first chunk, or
  // chunk `c` of a split item.
  struct Work {
    const Item* item;
    int64_t kvh, chunk_begin;
    const SplitItem* split;
    int64_t c;
  };
  const auto work_of = [&](int64_t task) {
    const auto [index, c] = tasks[static_cast<size_t>(task / num_kv_heads)];
    const int64_t kvh = task % num_kv_heads;
    if (c < 0) {
      const Item& item = items[index];
      return Work{&item, kvh, positions(layout, item).first_seen / chunk * chunk, nullptr, c};
    }
    const SplitItem& split = splits[index];
    return Work{&items[split.item], kvh, (split.first_chunk + c) * chunk, &split, c};
  };
  for_each_task(num_tasks, work, make_scratch, [&](int64_t task, Scratch& scratch) {
    // The next task's first tile, asked for while this one runs (the thread
    // that takes a task usually takes the next): with short contexts most
    // of a step's rows are in first tiles.
    if (task + 1 < num_tasks) {
      const Work next = work_of(task + 1);
      prefetch_first_tile(layout, *next.item, next.kvh, next.chunk_begin, next.chunk_begin + chunk);
    }
    const Work w = work_of(task);
    if (w.split == nullptr)
      return bf16_tiles ? run_item_bf16(layout, *w.item, w.kvh, chunk, scratch)
                        : run_item(layout, *w.item, w.kvh, chunk, scratch);
    float* partial = partials + ((w.split->first_slot + w.c) * num_kv_heads + w.kvh) * stride;
    const int64_t end = w.chunk_begin + chunk;
    if (bf16_tiles)
      return run_chunk_to_bf16(layout, *w.item, w.kvh, w.chunk_begin, end, partial, scratch);
    run_chunk_to(layout, *w.item, w.kvh, w.chunk_begin, end, partial, scratch);
  });
  if (splits.empty()) return;
  for_each_task(static_cast<int64_t>(splits.size()) * num_kv_heads,
                num_slots * stride * num_kv_heads, make_scratch,
                [&](int64_t task, Scratch& scratch) {
                  const SplitItem& split = splits[static_cast<size_t>(task / num_kv_heads)];
                  const int64_t kvh = task % num_kv_heads;
                  const float* first = partials + (split.first_slot * num_kv_heads + kvh) * stride;
                  if (bf16_tiles)
                    return merge_chunks_bf16(layout, items[split.item], kvh, first,
                                             split.num_chunks, num_kv_heads * stride, scratch);
                  merge_chunks(layout, items[split.item], kvh, first, split.num_chunks,
                               num_kv_heads * stride, scratch);
                });
}

}  // namespace hive::cpu
