#include "runtime/model/mla_attention.hpp"

#include <cmath>

#include "base/error.hpp"
#include "runtime/model/rope.hpp"

namespace hive {

namespace {

// kv_a_layernorm and q_a_layernorm use DeepSeek-V2/V3's RMSNorm default eps,
// not the config's rms_norm_eps.
constexpr float kLatentNormEps = 1e-6f;

// A checkpoint tensor's values as f32 on the host (the model's weights are
// host memory: Model accepts only the CPU backend for now).
std::vector<float> host_floats(const Tensor& t) {
  check(t.device == Device::cpu && t.is_contiguous(), "MLA: weight ", t.shape_text(),
        " must be contiguous host memory");
  std::vector<float> out(static_cast<size_t>(t.numel()));
  if (t.dtype == DType::f8_e4m3) {  // an FP8 checkpoint's, with its block scales
    const int64_t rows = t.shape[0], k = t.shape[1], scale_cols = (k + kFp8Block - 1) / kFp8Block;
    for (int64_t r = 0; r < rows; ++r)
      f8_e4m3_row_to_f32(t.as<uint8_t>() + r * k, t.block_scales + r / kFp8Block * scale_cols, k,
                         out.data() + r * k);
    return out;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    switch (t.dtype) {
      case DType::f32:
        out[i] = t.as<float>()[i];
        break;
      case DType::bf16:
        out[i] = bf16_to_f32(t.as<uint16_t>()[i]);
        break;
      case DType::f16:
        out[i] = f16_to_f32(t.as<uint16_t>()[i]);
        break;
      default:
        fail("MLA: weight of dtype ", dtype_name(t.dtype), " (expected f32, bf16, f16 or f8_e4m3)");
    }
  }
  return out;
}

Buffer upload_matrix(Backend& backend, const std::vector<float>& host, int64_t rows, int64_t cols) {
  Buffer b(backend, DType::f32, {rows, cols});
  backend.copy(b.tensor(), Tensor::view(const_cast<float*>(host.data()), DType::f32, {rows, cols}));
  return b;
}

}  // namespace

int64_t mla_latent_column(const MlaConfig& m, int64_t a) {
  return a < m.kv_lora_rank / 2 ? a : a + m.qk_rope_head_dim / 2;
}

int64_t mla_rope_column(const MlaConfig& m, int64_t j) {
  return j < m.qk_rope_head_dim / 2 ? m.kv_lora_rank / 2 + j : m.kv_lora_rank + j;
}

int64_t mla_rope_source(const MlaConfig& m, int64_t j) {
  if (!m.rope_interleave) return j;
  const int64_t half = m.qk_rope_head_dim / 2;
  return j < half ? 2 * j : 2 * (j - half) + 1;
}

float mla_softmax_scale(const ModelConfig& c) {
  double scale = 1.0 / std::sqrt(static_cast<double>(c.mla->qk_head_dim()));
  if (c.rope.type != "default" && c.rope.mscale_all_dim != 0) {
    const double m = yarn_mscale(c.rope.factor, c.rope.mscale_all_dim);
    scale *= m * m;
  }
  return static_cast<float>(scale);
}

MlaAttention::MlaAttention(Backend& backend, const ModelConfig& config, const MlaWeights& weights)
    : backend_(backend), config_(config), weights_(weights), scale_(mla_softmax_scale(config)) {
  const MlaConfig& m = *config.mla;
  const int64_t rank = m.kv_lora_rank, rope = m.qk_rope_head_dim, nope = m.qk_nope_head_dim;
  const int64_t latent = m.latent_dim(), qk = m.qk_head_dim(), v = m.v_head_dim;
  const int64_t hidden = config.hidden_size;
  // YaRN scales cos and sin by this; rope is linear, so it is folded into
  // the rope parts of the query and key projections here.
  const auto factor = static_cast<float>(rope_attention_factor(config.rope));

  const std::vector<float> kv_b = host_floats(weights.kv_b_proj);  // [heads * (nope + v), rank]
  for (int64_t h = 0; h < config.num_heads; ++h) {
    const float* w_uk = kv_b.data() + h * (nope + v) * rank;  // [nope, rank]
    const float* w_uv = w_uk + nope * rank;                   // [v, rank]
    std::vector<float> absorb_q(static_cast<size_t>(latent * qk), 0.0f);
    for (int64_t a = 0; a < rank; ++a)
      for (int64_t d = 0; d < nope; ++d)
        absorb_q[static_cast<size_t>(mla_latent_column(m, a) * qk + d)] = w_uk[d * rank + a];
    for (int64_t j = 0; j < rope; ++j)
      absorb_q[static_cast<size_t>(mla_rope_column(m, j) * qk + nope + mla_rope_source(m, j))] =
          factor;
    absorb_q_.push_back(upload_matrix(backend, absorb_q, latent, qk));
    std::vector<float> absorb_v(static_cast<size_t>(v * latent), 0.0f);
    for (int64_t e = 0; e < v; ++e)
      for (int64_t a = 0; a < rank; ++a)
        absorb_v[static_cast<size_t>(e * latent + mla_latent_column(m, a))] = w_uv[e * rank + a];
    absorb_v_.push_back(upload_matrix(backend, absorb_v, v, latent));
  }

  const std::vector<float> kv_a = host_floats(weights.kv_a_proj);  // [rank + rope, hidden]
  std::vector<float> rope_row(static_cast<size_t>(latent * hidden), 0.0f);
  for (int64_t j = 0; j < rope; ++j)
    for (int64_t i = 0; i < hidden; ++i)
      rope_row[static_cast<size_t>(mla_rope_column(m, j) * hidden + i)] =
          factor * kv_a[static_cast<size_t>((rank + mla_rope_source(m, j)) * hidden + i)];
  rope_row_ = upload_matrix(backend, rope_row, latent, hidden);
  std::vector<float> place(static_cast<size_t>(latent * rank), 0.0f);
  for (int64_t a = 0; a < rank; ++a)
    place[static_cast<size_t>(mla_latent_column(m, a) * rank + a)] = 1.0f;
  latent_place_ = upload_matrix(backend, place, latent, rank);

  std::vector<float> inv_freq(static_cast<size_t>(latent / 2), 0.0f);
  const std::vector<float> rope_freq = rope_inv_freq(config.rope, rope);
  for (int64_t j = 0; j < rope / 2; ++j)
    inv_freq[static_cast<size_t>(rank / 2 + j)] = rope_freq[static_cast<size_t>(j)];
  inv_freq_ = upload<float>(backend, inv_freq, DType::f32);
}

Buffer MlaAttention::head_rows(int64_t n) const {
  const int64_t heads = config_.num_heads;
  std::vector<int32_t> rows(static_cast<size_t>(heads * n));
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < n; ++i)
      rows[static_cast<size_t>(h * n + i)] = static_cast<int32_t>(i * heads + h);
  return upload<int32_t>(backend_, rows, DType::i32);
}

MlaProjections MlaAttention::project(const Tensor& x, const Tensor& positions) const {
  const MlaConfig& m = *config_.mla;
  const int64_t n = x.shape[0], heads = config_.num_heads, qk = m.qk_head_dim();
  const int64_t latent = m.latent_dim(), rank = m.kv_lora_rank;
  const MlaWeights& w = weights_;
  Buffer q(backend_, DType::f32, {n * heads, qk});
  const Tensor q_flat = q.view(DType::f32, {n, heads * qk});
  if (w.q_proj) {
    backend_.matmul(x, *w.q_proj, nullptr, q_flat);
  } else {
    Buffer compressed(backend_, DType::f32, {n, m.q_lora_rank});
    backend_.matmul(x, *w.q_a_proj, nullptr, compressed.tensor());
    backend_.rms_norm(compressed.tensor(), *w.q_a_norm, kLatentNormEps, compressed.tensor());
    backend_.matmul(compressed.tensor(), *w.q_b_proj, nullptr, q_flat);
  }
  // Each head's query into the row space: gather the head's rows, one
  // matmul, and add them back in place (exact: into zeros, times 1).
  MlaProjections p{Buffer(backend_, DType::f32, {n, heads, latent}),
                   Buffer(backend_, DType::f32, {n, 1, latent})};
  const Tensor queries = p.queries.view(DType::f32, {n * heads, latent});
  backend_.fill(queries, 0.0f);
  const Buffer rows = head_rows(n);
  const Buffer ones =
      upload<float>(backend_, std::vector<float>(static_cast<size_t>(n), 1.0f), DType::f32);
  Buffer head_q(backend_, DType::f32, {n, qk});
  Buffer head_latent(backend_, DType::f32, {n, latent});
  for (int64_t h = 0; h < heads; ++h) {
    const Tensor index = rows.tensor().rows(h * n, n);
    backend_.gather_rows(q.tensor(), index, head_q.tensor());
    backend_.matmul(head_q.tensor(), absorb_q_[static_cast<size_t>(h)].tensor(), nullptr,
                    head_latent.tensor());
    backend_.scatter_add_rows(head_latent.tensor(), index, ones.tensor(), queries);
  }
  backend_.rope(p.queries.tensor(), positions, inv_freq_.tensor());

  // The cache row: k_pe's projection lands in place, the normed latent is
  // placed next to it by a 0/1 matmul (exact).
  Buffer latent_c(backend_, DType::f32, {n, rank});
  backend_.matmul(x, weights_.kv_a_proj.rows(0, rank), nullptr, latent_c.tensor());
  backend_.rms_norm(latent_c.tensor(), weights_.kv_a_norm, kLatentNormEps, latent_c.tensor());
  const Tensor row = p.rows.view(DType::f32, {n, latent});
  Buffer placed(backend_, DType::f32, {n, latent});
  backend_.matmul(x, rope_row_.tensor(), nullptr, row);
  backend_.matmul(latent_c.tensor(), latent_place_.tensor(), nullptr, placed.tensor());
  backend_.add(row, placed.tensor(), row);
  backend_.rope(p.rows.tensor(), positions, inv_freq_.tensor());
  return p;
}

void MlaAttention::output(const Tensor& attended, const Tensor& out) const {
  const MlaConfig& m = *config_.mla;
  const int64_t n = attended.shape[0], heads = config_.num_heads, latent = m.latent_dim();
  const int64_t v = m.v_head_dim;
  Buffer values(backend_, DType::f32, {n * heads, v});
  backend_.fill(values.tensor(), 0.0f);
  const Buffer rows = head_rows(n);
  const Buffer ones =
      upload<float>(backend_, std::vector<float>(static_cast<size_t>(n), 1.0f), DType::f32);
  Buffer head_latent(backend_, DType::f32, {n, latent});
  Buffer head_value(backend_, DType::f32, {n, v});
  const Tensor attended_rows = attended.reshape({n * heads, latent});
  for (int64_t h = 0; h < heads; ++h) {
    const Tensor index = rows.tensor().rows(h * n, n);
    backend_.gather_rows(attended_rows, index, head_latent.tensor());
    backend_.matmul(head_latent.tensor(), absorb_v_[static_cast<size_t>(h)].tensor(), nullptr,
                    head_value.tensor());
    backend_.scatter_add_rows(head_value.tensor(), index, ones.tensor(), values.tensor());
  }
  backend_.matmul(values.view(DType::f32, {n, heads * v}), weights_.o_proj, nullptr, out);
}

void MlaAttention::forward(const Tensor& x, const Tensor& positions, const Tensor& slot_mapping,
                           const AttentionPlan& plan, const Tensor& cache_blocks,
                           const Tensor& out) const {
  const int64_t n = x.shape[0], heads = config_.num_heads, latent = config_.mla->latent_dim();
  const MlaProjections p = project(x, positions);
  // No value blocks: the row is written once, as key and (same blocks) value.
  backend_.reshape_and_cache(p.rows.tensor(), p.rows.tensor(), slot_mapping, cache_blocks,
                             cache_blocks);
  Buffer attended(backend_, DType::f32, {n, heads, latent});
  PagedAttentionParams params;
  params.q = p.queries.tensor();
  params.k_blocks = cache_blocks;
  params.v_blocks = cache_blocks;
  params.out = attended.tensor();
  params.plan = plan;
  params.scale = scale_;
  backend_.paged_attention(params);
  output(attended.tensor(), out);
}

}  // namespace hive
