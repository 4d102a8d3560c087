#pragma once
// The inner loops of the batched paged attention (paged_attention_fast.cpp),
// inlined into its per-machine clones: the online softmax of one work item
// over one key tile, and the fold of a context chunk's softmax state into a
// query's running total. Internal to the kernel; nothing else includes it.
//
// Per (query, head) the state is (max, sum, acc[head_dim]): the running
// maximum score, the sum of exp(score - max) and the exp-weighted sum of
// value rows. A chunk of the context starts from an empty state; chunks are
// folded in position order, so the bits depend on the chunk boundaries
// (absolute positions) and nothing else.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/vector_exp.hpp"
#include "kernels/kv_quant.hpp"

namespace hive::cpu::paged {

inline constexpr int64_t kKeyTile = 32;  // positions per softmax tile

// Queries [first_query, first_query + num_queries) of sequence seq.
struct Item {
  int64_t seq, first_query, num_queries;
};

// The op's inputs, unpacked once per call.
struct Layout {
  const float* q;
  const void* k;  // f32, bf16 when kv_bf16, or quantized rows (kv_dtype)
  const void* v;
  bool kv_bf16;
  float* out;
  const int32_t* query_start;
  const int32_t* context_lens;
  const int32_t* table_start;
  const int32_t* tables;
  int64_t num_heads, num_kv_heads, head_dim, group, block_size, sliding_window;
  float scale;
  bool amx = false;  // the bf16 mode's tiles as AMX tiles (add_tile_bf16)
  DType kv_dtype = DType::f32;
  int64_t row_stride = 0;  // elements per cached row: head_dim, or codes + scale (kv_quant.hpp)
};

// One thread's working memory: the current chunk's states and the folded
// totals of up to kQueryBlock queries x group heads.
struct Scratch {
  std::vector<float> scores, acc, max, sum;
  std::vector<const float*> keys, values;
  std::vector<float> key_rows, value_rows;  // a bf16 tile's rows, widened once
  std::vector<float> total_acc, total_max, total_sum;
  // The bf16 mode's tile (paged_attention_bf16.cpp): query rows, key rows
  // transposed, softmax weights and value rows, all as bf16 pairs.
  std::vector<uint32_t> q_pairs, key_pairs, weight_pairs;
  std::vector<uint16_t> value_pairs;
  // The amx path: the rows the thread's AMX tiles are configured for, 0
  // while they are not (paged_attention_bf16.cpp).
  int64_t amx_rows = 0;
};

using Lanes16 = float __attribute__((vector_size(64)));
using Lanes8 = float __attribute__((vector_size(32)));
using Lanes4 = float __attribute__((vector_size(16)));

// 16 lanes folded in halves: l + 8 onto l, then + 4, + 2, + 1.
inline __attribute__((always_inline)) float fold_lanes(const Lanes16& v) {
  const Lanes8 s8 = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                    __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  const Lanes4 s4 =
      __builtin_shufflevector(s8, s8, 0, 1, 2, 3) + __builtin_shufflevector(s8, s8, 4, 5, 6, 7);
  const float s2_0 = s4[0] + s4[2], s2_1 = s4[1] + s4[3];
  return s2_0 + s2_1;
}

// q . k in 16 lanes folded 8/4/2/1, as dot() sums, but inlined into the
// caller's clone: one call per key and head cost more than its arithmetic.
// The lanes are a vector type so the fold stays in registers (as a float
// array it went through the stack, a third of the kernel's time); the
// arithmetic and its order are those of the array.
inline __attribute__((always_inline)) float dot_row(const float* q, const float* k, int64_t n) {
  constexpr int kLanes = 16;
  Lanes16 partial = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    Lanes16 a, b;
    std::memcpy(&a, q + i, sizeof a);
    std::memcpy(&b, k + i, sizeof b);
    partial += a * b;
  }
  if (i < n) {  // the last, partial chunk in lanes 0..n-i-1
    float lanes[kLanes];
    std::memcpy(lanes, &partial, sizeof lanes);
    for (int lane = 0; i < n; ++i, ++lane) lanes[lane] += q[i] * k[i];
    std::memcpy(&partial, lanes, sizeof lanes);
  }
  return fold_lanes(partial);
}

// Folds 16 dot_row partial-sum vectors to their 16 sums, sums[j] from p[j],
// as one transposing tree: each level adds lane l to lane l + half within
// every vector, as dot_row's fold does, with 15 vector adds where 16
// separate folds took 16 horizontal ones.
inline __attribute__((always_inline)) void fold_16(const Lanes16* p, float* sums) {
  Lanes16 s8[8], s4[4], s2[2];
  for (int j = 0; j < 8; ++j)  // vectors 2j, 2j+1: lanes l + (l + 8)
    s8[j] = __builtin_shufflevector(p[2 * j], p[2 * j + 1], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19,
                                    20, 21, 22, 23) +
            __builtin_shufflevector(p[2 * j], p[2 * j + 1], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25,
                                    26, 27, 28, 29, 30, 31);
  for (int j = 0; j < 4; ++j)  // vectors 4j..4j+3: lanes l + (l + 4)
    s4[j] = __builtin_shufflevector(s8[2 * j], s8[2 * j + 1], 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18,
                                    19, 24, 25, 26, 27) +
            __builtin_shufflevector(s8[2 * j], s8[2 * j + 1], 4, 5, 6, 7, 12, 13, 14, 15, 20, 21,
                                    22, 23, 28, 29, 30, 31);
  for (int j = 0; j < 2; ++j)  // vectors 8j..8j+7: lanes l + (l + 2)
    s2[j] = __builtin_shufflevector(s4[2 * j], s4[2 * j + 1], 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20,
                                    21, 24, 25, 28, 29) +
            __builtin_shufflevector(s4[2 * j], s4[2 * j + 1], 2, 3, 6, 7, 10, 11, 14, 15, 18, 19,
                                    22, 23, 26, 27, 30, 31);
  // vectors 0..15: lane 0 + lane 1
  const Lanes16 s1 = __builtin_shufflevector(s2[0], s2[1], 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20,
                                             22, 24, 26, 28, 30) +
                     __builtin_shufflevector(s2[0], s2[1], 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21,
                                             23, 25, 27, 29, 31);
  std::memcpy(sums, &s1, sizeof s1);
}

// dot_row of q with 16 key rows at once, scores[j] = dot_row(q, keys[j], n)
// bit for bit (n a multiple of 16): each key's 16 partial sums built the
// same way, then folded by fold_16.
inline __attribute__((always_inline)) void dot_16_rows(const float* q, const float* const* keys,
                                                       int64_t n, float* scores) {
  Lanes16 p[16];
  for (int j = 0; j < 16; ++j) p[j] = Lanes16{};
  for (int64_t i = 0; i < n; i += 16) {
    Lanes16 a;
    std::memcpy(&a, q + i, sizeof a);
    for (int j = 0; j < 16; ++j) {
      Lanes16 b;
      std::memcpy(&b, keys[j] + i, sizeof b);
      p[j] += a * b;
    }
  }
  fold_16(p, scores);
}

// dot_row of 4 query heads (q rows n apart) with 4 key rows, bit for bit
// (n a multiple of 16): scores[g * kKeyTile + j] for head g and key j. Each
// key vector loaded serves the 4 heads of a GQA group, where dot_16_rows
// loads every key row once per head.
inline __attribute__((always_inline)) void dot_4x4(const float* q, const float* const* keys,
                                                   int64_t n, float* scores) {
  Lanes16 p[16];
  for (int j = 0; j < 16; ++j) p[j] = Lanes16{};
  for (int64_t i = 0; i < n; i += 16) {
    Lanes16 a[4], b[4];
    for (int g = 0; g < 4; ++g) std::memcpy(&a[g], q + g * n + i, sizeof a[g]);
    for (int j = 0; j < 4; ++j) std::memcpy(&b[j], keys[j] + i, sizeof b[j]);
    for (int g = 0; g < 4; ++g)
      for (int j = 0; j < 4; ++j) p[g * 4 + j] += a[g] * b[j];
  }
  float sums[16];
  fold_16(p, sums);
  for (int g = 0; g < 4; ++g) std::memcpy(scores + g * kKeyTile, sums + 4 * g, 4 * sizeof(float));
}

// Where an item's queries sit: the first position any of them sees (the
// sliding window's edge) and the last query's position.
struct Positions {
  int64_t first_seen, last;
};

inline __attribute__((always_inline)) Positions positions(const Layout& l, const Item& item) {
  const int64_t num_seq_queries = l.query_start[item.seq + 1] - l.query_start[item.seq];
  const int64_t first = l.context_lens[item.seq] - num_seq_queries + item.first_query;
  const int64_t first_seen =
      l.sliding_window > 0 ? std::max<int64_t>(0, first - l.sliding_window + 1) : 0;
  return {first_seen, first + item.num_queries - 1};
}

// The positions [lo, hi) of key tile [tile_begin, tile_end) that query i of
// the item sees; none when lo >= hi.
struct Seen {
  int64_t lo, hi;
};

inline __attribute__((always_inline)) Seen seen(const Layout& l, const Item& item, int64_t i,
                                                int64_t tile_begin, int64_t tile_end) {
  const int64_t num_seq_queries = l.query_start[item.seq + 1] - l.query_start[item.seq];
  const int64_t last = l.context_lens[item.seq] - num_seq_queries + item.first_query + i;
  const int64_t first =
      l.sliding_window > 0 ? std::max<int64_t>(0, last - l.sliding_window + 1) : 0;
  return {std::max(first, tile_begin), std::min(last + 1, tile_end)};
}

// exp(x) for the softmax's weights, where x <= 0 (a score minus a running
// maximum; -inf gives 0).
inline __attribute__((always_inline)) float softmax_exp(float x) {
  return vector_exp(x);
}

// Where position j's row of KV head kvh starts, in elements of the pool.
inline __attribute__((always_inline)) int64_t row_offset(const Layout& l, const int32_t* table,
                                                         int64_t kvh, int64_t j) {
  const int64_t slot = int64_t{table[j / l.block_size]} * l.block_size + j % l.block_size;
  return (slot * l.num_kv_heads + kvh) * l.row_stride;
}

// Points s.keys/s.values at the rows of positions [lo, hi) of the tile that
// starts at tile_begin, widening bf16 rows once for all queries and heads of
// the item (exact, so the bits are those of an f32 cache of those values),
// and dequantizing quantized rows likewise (code times scale, the bits of an
// f32 cache of the dequantized rows).
inline __attribute__((always_inline)) void load_rows(const Layout& l, const Item& item, int64_t kvh,
                                                     int64_t tile_begin, int64_t lo, int64_t hi,
                                                     Scratch& s) {
  const int32_t* table = l.tables + l.table_start[item.seq];
  const int64_t hd = l.head_dim;
  for (int64_t j = lo; j < hi; ++j) {
    const auto at = static_cast<size_t>(j - tile_begin);
    if (s.keys[at] != nullptr) continue;
    const int64_t offset = row_offset(l, table, kvh, j);
    if (is_kv_quantized(l.kv_dtype)) {
      float* key_row = s.key_rows.data() + (j - tile_begin) * hd;
      float* value_row = s.value_rows.data() + (j - tile_begin) * hd;
      dequantize_kv_row(static_cast<const uint8_t*>(l.k) + offset, hd, l.kv_dtype, key_row);
      dequantize_kv_row(static_cast<const uint8_t*>(l.v) + offset, hd, l.kv_dtype, value_row);
      s.keys[at] = key_row;
      s.values[at] = value_row;
    } else if (l.kv_bf16) {
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
}

// Asks for the K and V rows of positions [lo, hi) ahead of load_rows. A
// row is a line or two at a stride of num_kv_heads rows, in blocks scattered
// over the pool: the hardware prefetchers miss most of them, and a tile's
// loads would otherwise wait on memory one row after another. Into L2
// (prefetcht1): into L1 measured slower, the tile's widened rows and
// scores live there (docs/benchmarks.md).
inline __attribute__((always_inline)) void prefetch_rows(const Layout& l, const Item& item,
                                                         int64_t kvh, int64_t lo, int64_t hi) {
  const int32_t* table = l.tables + l.table_start[item.seq];
  const auto element_bytes = static_cast<int64_t>(dtype_size(l.kv_dtype));
  const int64_t row_bytes = l.row_stride * element_bytes;
  const char* k = static_cast<const char*>(l.k);
  const char* v = static_cast<const char*>(l.v);
  for (int64_t j = lo; j < hi; ++j) {
    const int64_t offset = row_offset(l, table, kvh, j) * element_bytes;
    for (int64_t byte = 0; byte < row_bytes; byte += 64) {
      __builtin_prefetch(k + offset + byte, 0, 2);
      __builtin_prefetch(v + offset + byte, 0, 2);
    }
    __builtin_prefetch(k + offset + row_bytes - 1, 0, 2);  // a row that straddles a line
    __builtin_prefetch(v + offset + row_bytes - 1, 0, 2);
  }
}

// A tile's scores times scale in lanes [lane_lo, lane_hi), -inf elsewhere.
inline __attribute__((always_inline)) void scale_and_mask(float* scores, int64_t lane_lo,
                                                          int64_t lane_hi, float scale) {
  using Ints16 = int32_t __attribute__((vector_size(64)));
  const Ints16 lanes = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  const auto lo = static_cast<int32_t>(lane_lo), hi = static_cast<int32_t>(lane_hi);
  for (int32_t half = 0; half < 2; ++half) {
    Lanes16 x;
    std::memcpy(&x, scores + 16 * half, sizeof x);
    const Ints16 lane = lanes + 16 * half;
    const Lanes16 minus_infinity = Lanes16{} - INFINITY;
    x = (lane >= lo && lane < hi) ? x * scale : minus_infinity;
    std::memcpy(scores + 16 * half, &x, sizeof x);
  }
}

// The largest of a tile's kKeyTile lanes (exact in any order).
inline __attribute__((always_inline)) float max_lanes(const float* x) {
  Lanes16 a, b;
  std::memcpy(&a, x, sizeof a);
  std::memcpy(&b, x + 16, sizeof b);
  const Lanes16 m16 = a > b ? a : b;
  const Lanes8 lo8 = __builtin_shufflevector(m16, m16, 0, 1, 2, 3, 4, 5, 6, 7),
               hi8 = __builtin_shufflevector(m16, m16, 8, 9, 10, 11, 12, 13, 14, 15);
  const Lanes8 m8 = lo8 > hi8 ? lo8 : hi8;
  float m = m8[0];
  for (int lane = 1; lane < 8; ++lane) m = std::max(m, m8[lane]);
  return m;
}

// The sum of a tile's kKeyTile lanes in one fixed order: lane l + (l + 16),
// then folded in halves as dot_row folds. Lanes a query does not see hold
// +0, which adds exactly nothing, so the sum depends on the weights it sees
// and their positions alone.
inline __attribute__((always_inline)) float sum_lanes(const float* x) {
  Lanes16 a, b;
  std::memcpy(&a, x, sizeof a);
  std::memcpy(&b, x + 16, sizeof b);
  const Lanes16 s16 = a + b;
  return fold_lanes(s16);
}

// acc[g][d] += sum over j of w[g][j] * values[j][d], j in [0, count) in
// order, for G heads (accumulators head_dim apart, weights kKeyTile apart)
// and d in [0, 64): the G x 4 accumulators stay in registers for all the
// tile's values, each value vector loaded once for the G heads. Every
// acc[g][d] is the chain of multiply-adds the one-at-a-time loop makes.
template <int G>
inline __attribute__((always_inline)) void add_values_64(float* acc, int64_t hd, const float* w,
                                                         const float* const* values, int64_t count,
                                                         int64_t d0) {
  Lanes16 a[G][4];
  for (int g = 0; g < G; ++g)
    for (int v = 0; v < 4; ++v) std::memcpy(&a[g][v], acc + g * hd + d0 + 16 * v, sizeof a[g][v]);
  for (int64_t j = 0; j < count; ++j) {
    Lanes16 row[4];
    for (int v = 0; v < 4; ++v) std::memcpy(&row[v], values[j] + d0 + 16 * v, sizeof row[v]);
    for (int g = 0; g < G; ++g) {
      const float weight = w[g * kKeyTile + j];
      for (int v = 0; v < 4; ++v) a[g][v] += weight * row[v];
    }
  }
  for (int g = 0; g < G; ++g)
    for (int v = 0; v < 4; ++v) std::memcpy(acc + g * hd + d0 + 16 * v, &a[g][v], sizeof a[g][v]);
}

// Turns one (query, head)'s raw scores of a tile (lanes [lane_lo, lane_hi)
// seen) into softmax weights, updating its running maximum and sum and
// rescaling its acc[head_dim] to the new maximum.
inline __attribute__((always_inline)) void softmax_row(const Layout& l, float* scores,
                                                       int64_t lane_lo, int64_t lane_hi,
                                                       float& running_max, float& sum, float* acc) {
  scale_and_mask(scores, lane_lo, lane_hi, l.scale);
  const float new_max = std::max(running_max, max_lanes(scores));
  const float rescale = softmax_exp(running_max - new_max);  // 0 on the first tile
  for (int64_t j = 0; j < kKeyTile; ++j) scores[j] = softmax_exp(scores[j] - new_max);
  sum = sum * rescale + sum_lanes(scores);
  running_max = new_max;
  for (int64_t d = 0; d < l.head_dim; ++d) acc[d] *= rescale;
}

// softmax_row for query i's heads, their raw scores in s.scores (head g at
// g * kKeyTile).
inline __attribute__((always_inline)) void softmax_tile(const Layout& l, int64_t i, int64_t lane_lo,
                                                        int64_t lane_hi, Scratch& s) {
  for (int64_t g = 0; g < l.group; ++g) {
    const auto state = static_cast<size_t>(i * l.group + g);
    softmax_row(l, s.scores.data() + g * kKeyTile, lane_lo, lane_hi, s.max[state], s.sum[state],
                s.acc.data() + state * l.head_dim);
  }
}

// Folds key tile [tile_begin, tile_end) into the chunk state of the (query,
// head) pairs of `item` whose queries see part of it. A tile's scores and
// weights sit at lane position - tile_begin of s.scores; lanes a query does
// not see are -inf before the softmax and 0 after it.
inline __attribute__((always_inline)) void add_tile(const Layout& l, const Item& item, int64_t kvh,
                                                    int64_t tile_begin, int64_t tile_end,
                                                    Scratch& s) {
  const int64_t hd = l.head_dim;
  for (int64_t i = 0; i < item.num_queries; ++i) {
    const auto [lo, hi] = seen(l, item, i, tile_begin, tile_end);
    if (lo >= hi) continue;
    load_rows(l, item, kvh, tile_begin, lo, hi, s);
    const int64_t lane_lo = lo - tile_begin, lane_hi = hi - tile_begin;
    // Scores and softmax weights of every head of the group, then each value
    // row read once for all of them; each acc[d] still adds in position order.
    const int64_t token = l.query_start[item.seq] + item.first_query + i;
    const float* group_q = l.q + (token * l.num_heads + kvh * l.group) * hd;
    const float* const* keys = s.keys.data();
    int64_t g = 0;
    if (hd % 16 == 0)  // 4 heads x 4 keys at a time, the rest below
      for (; g + 4 <= l.group; g += 4) {
        float* scores = s.scores.data() + g * kKeyTile;
        int64_t lane = lane_lo;
        for (; lane + 4 <= lane_hi; lane += 4)
          dot_4x4(group_q + g * hd, keys + lane, hd, scores + lane);
        for (int64_t h = 0; h < 4; ++h)
          for (int64_t j = lane; j < lane_hi; ++j)
            scores[h * kKeyTile + j] = dot_row(group_q + (g + h) * hd, keys[j], hd);
      }
    for (; g < l.group; ++g) {
      const float* q = group_q + g * hd;
      float* scores = s.scores.data() + g * kKeyTile;
      int64_t lane = lane_lo;  // keys before it went 16 at a time
      if (hd % 16 == 0)
        for (; lane + 16 <= lane_hi; lane += 16) dot_16_rows(q, keys + lane, hd, scores + lane);
      for (; lane < lane_hi; ++lane) scores[lane] = dot_row(q, keys[lane], hd);
    }
    softmax_tile(l, i, lane_lo, lane_hi, s);
    float* acc = s.acc.data() + i * l.group * hd;
    const float* const* values = s.values.data() + lane_lo;
    const float* weights = s.scores.data() + lane_lo;
    const int64_t count = lane_hi - lane_lo;
    if (hd % 64 == 0) {
      int64_t h = 0;
      for (; h + 4 <= l.group; h += 4)
        for (int64_t d0 = 0; d0 < hd; d0 += 64)
          add_values_64<4>(acc + h * hd, hd, weights + h * kKeyTile, values, count, d0);
      for (; h < l.group; ++h)
        for (int64_t d0 = 0; d0 < hd; d0 += 64)
          add_values_64<1>(acc + h * hd, hd, weights + h * kKeyTile, values, count, d0);
      continue;
    }
    for (int64_t j = 0; j < count; ++j)
      for (int64_t h = 0; h < l.group; ++h) {
        const float weight = weights[h * kKeyTile + j];
        float* a = acc + h * hd;
        for (int64_t d = 0; d < hd; ++d) a[d] += weight * values[j][d];
      }
  }
}

// Adds one chunk's state (max, sum, acc) to a running total, the
// log-sum-exp merge of flash-decoding. A chunk the query sees nothing of has
// sum 0 and is skipped; the first chunk seen is copied, so a context of one
// chunk gives exactly the unsplit kernel's bits.
inline __attribute__((always_inline)) void fold(float& total_max, float& total_sum,
                                                float* total_acc, float max, float sum,
                                                const float* acc, int64_t hd) {
  if (sum == 0.0f) return;
  if (total_sum == 0.0f) {
    total_max = max;
    total_sum = sum;
    std::copy_n(acc, hd, total_acc);
    return;
  }
  const float new_max = std::max(total_max, max);
  const float total_weight = softmax_exp(total_max - new_max), weight = softmax_exp(max - new_max);
  total_sum = total_sum * total_weight + sum * weight;
  for (int64_t d = 0; d < hd; ++d) total_acc[d] = total_acc[d] * total_weight + acc[d] * weight;
  total_max = new_max;
}

// The ISA of the bf16 mode's attention, as a function attribute (the file
// keeps baseline flags, so inline library code it instantiates stays
// baseline code wherever the linker picks it). With FMA, as the x86-64-v4
// clone of the f32 path: every function of the bf16 mode's path that folds
// chunks is built for this one target, so a fold contracts the same way in
// a prefill and in a decode's merge.
#if defined(__x86_64__)
#define HIVE_PAGED_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))
#define HIVE_PAGED_AMX \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma,amx-tile,amx-bf16")))
#else
#define HIVE_PAGED_BF16
#define HIVE_PAGED_AMX
#endif

// add_tile in the bf16 mode (cpu_features.hpp, MatmulPrecision::bf16), with
// vdpbf16ps: the tile's K and V (a bf16 cache) read as stored, q and the
// softmax weights rounded to bf16 (paged_attention_bf16.cpp). Only where the
// CPU has AVX512_BF16, for head_dim a multiple of 32; s holds the pair
// buffers (bf16_pairs_scratch).
void add_tile_bf16(const Layout& l, const Item& item, int64_t kvh, int64_t tile_begin,
                   int64_t tile_end, Scratch& s);
// The item's q rows for kv head kvh rounded into s.q_pairs, query i's group
// at i * group * head_dim / 2: once per chunk, before its tiles.
void round_queries_bf16(const Layout& l, const Item& item, int64_t kvh, Scratch& s);
// Hands back the thread's AMX tiles after an amx-path chunk (tilerelease):
// idle tile state costs every context switch its 8 KiB.
void release_tiles(Scratch& s);
// s's pair buffers for up to `states` (query, head) pairs.
void bf16_pairs_scratch(int64_t states, int64_t head_dim, Scratch& s);

}  // namespace hive::cpu::paged
