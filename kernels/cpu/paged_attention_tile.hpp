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

namespace hive::cpu::paged {

inline constexpr int64_t kKeyTile = 32;  // positions per softmax tile

// Queries [first_query, first_query + num_queries) of sequence seq.
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

// One thread's working memory: the current chunk's states and the folded
// totals of up to kQueryBlock queries x group heads.
struct Scratch {
  std::vector<float> scores, acc, max, sum;
  std::vector<const float*> keys, values;
  std::vector<float> key_rows, value_rows;  // a bf16 tile's rows, widened once
  std::vector<float> total_acc, total_max, total_sum;
};

// q . k in 16 lanes folded 8/4/2/1, as dot() sums, but inlined into the
// caller's clone: one call per key and head cost more than its arithmetic.
// The lanes are a vector type so the fold stays in registers (as a float
// array it went through the stack, a third of the kernel's time); the
// arithmetic and its order are those of the array.
using Lanes16 = float __attribute__((vector_size(64)));
using Lanes8 = float __attribute__((vector_size(32)));
using Lanes4 = float __attribute__((vector_size(16)));

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
  const Lanes8 s8 = __builtin_shufflevector(partial, partial, 0, 1, 2, 3, 4, 5, 6, 7) +
                    __builtin_shufflevector(partial, partial, 8, 9, 10, 11, 12, 13, 14, 15);
  const Lanes4 s4 = __builtin_shufflevector(s8, s8, 0, 1, 2, 3) +
                    __builtin_shufflevector(s8, s8, 4, 5, 6, 7);
  const float s2_0 = s4[0] + s4[2], s2_1 = s4[1] + s4[3];
  return s2_0 + s2_1;
}

// dot_row of q with 16 key rows at once, scores[j] = dot_row(q, keys[j], n)
// bit for bit (n a multiple of 16): each key's 16 partial sums are built the
// same way, then the 16 folds run as one transposing tree, each level
// adding lane l to lane l + half within every key, as the fold does, with
// 15 vector adds where 16 separate folds took 16 horizontal ones.
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
  Lanes16 s8[8], s4[4], s2[2];
  for (int j = 0; j < 8; ++j)  // keys 2j, 2j+1: lanes l + (l + 8)
    s8[j] = __builtin_shufflevector(p[2 * j], p[2 * j + 1], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18,
                                    19, 20, 21, 22, 23) +
            __builtin_shufflevector(p[2 * j], p[2 * j + 1], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25,
                                    26, 27, 28, 29, 30, 31);
  for (int j = 0; j < 4; ++j)  // keys 4j..4j+3: lanes l + (l + 4)
    s4[j] = __builtin_shufflevector(s8[2 * j], s8[2 * j + 1], 0, 1, 2, 3, 8, 9, 10, 11, 16, 17,
                                    18, 19, 24, 25, 26, 27) +
            __builtin_shufflevector(s8[2 * j], s8[2 * j + 1], 4, 5, 6, 7, 12, 13, 14, 15, 20, 21,
                                    22, 23, 28, 29, 30, 31);
  for (int j = 0; j < 2; ++j)  // keys 8j..8j+7: lanes l + (l + 2)
    s2[j] = __builtin_shufflevector(s4[2 * j], s4[2 * j + 1], 0, 1, 4, 5, 8, 9, 12, 13, 16, 17,
                                    20, 21, 24, 25, 28, 29) +
            __builtin_shufflevector(s4[2 * j], s4[2 * j + 1], 2, 3, 6, 7, 10, 11, 14, 15, 18, 19,
                                    22, 23, 26, 27, 30, 31);
  // keys 0..15: lane 0 + lane 1
  const Lanes16 s1 = __builtin_shufflevector(s2[0], s2[1], 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20,
                                             22, 24, 26, 28, 30) +
                     __builtin_shufflevector(s2[0], s2[1], 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21,
                                             23, 25, 27, 29, 31);
  std::memcpy(scores, &s1, sizeof s1);
}

// exp(x) for the softmax's weights, where x <= 0 (a score minus a running
// maximum; -inf gives 0).
inline __attribute__((always_inline)) float softmax_exp(float x) {
  return vector_exp(x);
}

// Points s.keys/s.values at the rows of positions [lo, hi) of the tile that
// starts at tile_begin, widening bf16 rows once for all queries and heads of
// the item (exact, so the bits are those of an f32 cache of those values).
inline __attribute__((always_inline)) void load_rows(const Layout& l, const Item& item, int64_t kvh,
                                                     int64_t tile_begin, int64_t lo, int64_t hi,
                                                     Scratch& s) {
  const int32_t* table = l.tables + l.table_start[item.seq];
  const int64_t hd = l.head_dim;
  for (int64_t j = lo; j < hi; ++j) {
    const auto at = static_cast<size_t>(j - tile_begin);
    if (s.keys[at] != nullptr) continue;
    const int64_t slot = int64_t{table[j / l.block_size]} * l.block_size + j % l.block_size;
    const int64_t offset = (slot * l.num_kv_heads + kvh) * hd;
    if (l.kv_bf16) {
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

// Folds key tile [tile_begin, tile_end) into the chunk state of the (query,
// head) pairs of `item` whose queries see part of it.
inline __attribute__((always_inline)) void add_tile(const Layout& l, const Item& item, int64_t kvh,
                                                    int64_t tile_begin, int64_t tile_end,
                                                    Scratch& s) {
  const int64_t context_len = l.context_lens[item.seq];
  const int64_t first_position =
      context_len - (l.query_start[item.seq + 1] - l.query_start[item.seq]);
  const int64_t hd = l.head_dim;
  for (int64_t i = 0; i < item.num_queries; ++i) {
    const int64_t last = first_position + item.first_query + i;
    const int64_t first =
        l.sliding_window > 0 ? std::max<int64_t>(0, last - l.sliding_window + 1) : 0;
    const int64_t lo = std::max(first, tile_begin), hi = std::min(last + 1, tile_end);
    if (lo >= hi) continue;
    load_rows(l, item, kvh, tile_begin, lo, hi, s);
    // Scores and softmax weights of every head of the group, then each value
    // row read once for all of them; each acc[d] still adds in position order.
    const int64_t token = l.query_start[item.seq] + item.first_query + i;
    for (int64_t g = 0; g < l.group; ++g) {
      const int64_t head = kvh * l.group + g, state = i * l.group + g;
      const float* q = l.q + (token * l.num_heads + head) * hd;
      float* scores = s.scores.data() + g * kKeyTile;
      const float* const* keys = s.keys.data() + (lo - tile_begin);
      int64_t first_single = lo;  // keys before it went 16 at a time
      if (hd % 16 == 0)
        for (; first_single + 16 <= hi; first_single += 16)
          dot_16_rows(q, keys + (first_single - lo), hd, scores + (first_single - lo));
      for (int64_t j = first_single; j < hi; ++j) scores[j - lo] = dot_row(q, keys[j - lo], hd);
      float tile_max = -INFINITY;
      for (int64_t j = lo; j < hi; ++j) {
        scores[j - lo] *= l.scale;
        tile_max = std::max(tile_max, scores[j - lo]);
      }
      float& running_max = s.max[static_cast<size_t>(state)];
      const float new_max = std::max(running_max, tile_max);
      const float rescale = softmax_exp(running_max - new_max);  // 0 on the first tile
      // The weights first (a loop the clone vectorizes), then their sum in
      // position order.
      for (int64_t j = lo; j < hi; ++j) scores[j - lo] = softmax_exp(scores[j - lo] - new_max);
      float tile_sum = 0.0f;
      for (int64_t j = lo; j < hi; ++j) tile_sum += scores[j - lo];
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
  const float total_weight = softmax_exp(total_max - new_max),
              weight = softmax_exp(max - new_max);
  total_sum = total_sum * total_weight + sum * weight;
  for (int64_t d = 0; d < hd; ++d) total_acc[d] = total_acc[d] * total_weight + acc[d] * weight;
  total_max = new_max;
}

}  // namespace hive::cpu::paged
