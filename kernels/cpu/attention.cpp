// Reference causal attention with GQA over a contiguous KV cache (see
// AttentionParams). Scores, softmax and the weighted sum are f32; work is
// split across (token, head) pairs, each computed in a fixed order.
#include <algorithm>
#include <cmath>
#include <vector>

#include "base/error.hpp"
#include "kernels/cpu/attend.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/parallel.hpp"

namespace hive::cpu {

void attention(const AttentionParams& p) {
  expect(p.q, DType::f32, 3, "attention q");
  expect(p.out, DType::f32, 3, "attention out");
  expect(p.k_cache, DType::f32, 3, "attention k_cache");
  expect(p.v_cache, DType::f32, 3, "attention v_cache");
  const int64_t num_tokens = p.q.shape[0], num_heads = p.q.shape[1], head_dim = p.q.shape[2];
  const int64_t num_kv_heads = p.k_cache.shape[1];
  const int64_t context_len = p.start_position + num_tokens;
  check(num_kv_heads > 0 && num_heads % num_kv_heads == 0 && p.k_cache.shape[2] == head_dim &&
            p.v_cache.shape[1] == num_kv_heads && p.v_cache.shape[2] == head_dim &&
            p.out.shape[0] == num_tokens && p.out.shape[1] == num_heads &&
            p.out.shape[2] == head_dim,
        "attention: q ", p.q.shape_text(), ", k ", p.k_cache.shape_text(), ", v ",
        p.v_cache.shape_text(), ", out ", p.out.shape_text(), " disagree");
  check(p.start_position >= 0 && context_len <= p.k_cache.shape[0] &&
            context_len <= p.v_cache.shape[0],
        "attention: context of ", context_len, " tokens exceeds the cache capacity ",
        p.k_cache.shape[0]);
  const int64_t group = num_heads / num_kv_heads;
  const float* q = p.q.as<float>();
  const float* k = p.k_cache.as<float>();
  const float* v = p.v_cache.as<float>();
  float* out = p.out.as<float>();
  for_each_task(
      num_tokens * num_heads, num_tokens * num_heads * context_len * head_dim,
      [&] { return std::vector<float>(static_cast<size_t>(context_len)); },
      [&](int64_t task, std::vector<float>& scores) {
        const int64_t i = task / num_heads, h = task % num_heads, kvh = h / group;
        attend(
            q + (i * num_heads + h) * head_dim, k, v, p.start_position + i, p.sliding_window,
            head_dim, p.scale, [&](int64_t j) { return (j * num_kv_heads + kvh) * head_dim; },
            scores, out + (i * num_heads + h) * head_dim);
      });
}

}  // namespace hive::cpu
