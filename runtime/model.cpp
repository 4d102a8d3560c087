#include "runtime/model.hpp"

#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/error.hpp"
#include "runtime/rope.hpp"

namespace hive {

namespace {

const Tensor* optional_ptr(const std::optional<Tensor>& t) { return t ? &*t : nullptr; }

constexpr Op kRequiredOps[] = {Op::embedding, Op::rms_norm,  Op::rope,     Op::matmul,
                               Op::add,       Op::mul_rows,  Op::silu_mul, Op::sigmoid,
                               Op::softmax,   Op::topk,      Op::normalize_rows,
                               Op::attention, Op::gather_rows, Op::scatter_add_rows};

}  // namespace

Model::Model(const std::filesystem::path& dir, Backend& backend)
    : config_(load_model_config(dir)),
      store_(dir),
      weights_(bind_weights(config_, store_)),
      backend_(backend) {
  check(backend.device() == Device::cpu, "models on a ", backend.name(),
        " backend need weight upload, which is not implemented yet");
  const std::vector<float> inv_freq = rope_inv_freq(config_.rope, config_.head_dim);
  inv_freq_ = Buffer(backend, DType::f32, {static_cast<int64_t>(inv_freq.size())});
  backend.copy(inv_freq_.tensor(), Tensor::view(const_cast<float*>(inv_freq.data()), DType::f32,
                                                {static_cast<int64_t>(inv_freq.size())}));
}

std::span<const Op> Model::required_ops() { return kRequiredOps; }

void Model::attention_block(int64_t layer, const Tensor& x, const Tensor& positions,
                            ContiguousKVCache& cache, const Tensor& out) {
  const ModelConfig& c = config_;
  const AttentionWeights& w = weights_.layers[static_cast<size_t>(layer)].attention;
  const int64_t n = x.shape[0], start = cache.num_tokens();
  Buffer q(backend_, DType::f32, {n, c.num_heads, c.head_dim});
  Buffer k(backend_, DType::f32, {n, c.num_kv_heads, c.head_dim});
  Buffer v(backend_, DType::f32, {n, c.num_kv_heads, c.head_dim});
  backend_.matmul(x, w.q_proj, optional_ptr(w.q_bias), q.view(DType::f32, {n, c.q_size()}));
  backend_.matmul(x, w.k_proj, optional_ptr(w.k_bias), k.view(DType::f32, {n, c.kv_size()}));
  backend_.matmul(x, w.v_proj, optional_ptr(w.v_bias), v.view(DType::f32, {n, c.kv_size()}));
  if (w.q_norm) {
    const Tensor q_rows = q.view(DType::f32, {n * c.num_heads, c.head_dim});
    const Tensor k_rows = k.view(DType::f32, {n * c.num_kv_heads, c.head_dim});
    backend_.rms_norm(q_rows, *w.q_norm, static_cast<float>(c.rms_norm_eps), q_rows);
    backend_.rms_norm(k_rows, *w.k_norm, static_cast<float>(c.rms_norm_eps), k_rows);
  }
  backend_.rope(q.tensor(), positions, inv_freq_.tensor());
  backend_.rope(k.tensor(), positions, inv_freq_.tensor());
  backend_.copy(cache.keys(layer).rows(start, n), k.tensor());
  backend_.copy(cache.values(layer).rows(start, n), v.tensor());

  Buffer attended(backend_, DType::f32, {n, c.num_heads, c.head_dim});
  AttentionParams params;
  params.q = q.tensor();
  params.k_cache = cache.keys(layer);
  params.v_cache = cache.values(layer);
  params.out = attended.tensor();
  params.start_position = start;
  params.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  params.sliding_window = c.sliding_window;
  backend_.attention(params);
  backend_.matmul(attended.view(DType::f32, {n, c.q_size()}), w.o_proj, optional_ptr(w.o_bias),
                  out);
}

void Model::forward(std::span<const int32_t> tokens, ContiguousKVCache& cache,
                    const Tensor& logits) {
  const ModelConfig& c = config_;
  const auto n = static_cast<int64_t>(tokens.size());
  const int64_t start = cache.num_tokens();
  check(n >= 1, "forward: no tokens");
  check(start + n <= cache.capacity(), "forward: ", start, " + ", n,
        " tokens exceed the KV cache capacity ", cache.capacity());
  check(logits.ndim == 2 && logits.shape[0] >= 1 && logits.shape[0] <= n &&
            logits.shape[1] == c.vocab_size,
        "forward: logits ", logits.shape_string(), " for ", n, " tokens and vocab ", c.vocab_size);

  std::vector<int32_t> positions_host(static_cast<size_t>(n));
  std::iota(positions_host.begin(), positions_host.end(), static_cast<int32_t>(start));
  Buffer ids(backend_, DType::i32, {n});
  Buffer positions(backend_, DType::i32, {n});
  backend_.copy(ids.tensor(), Tensor::view(const_cast<int32_t*>(tokens.data()), DType::i32, {n}));
  backend_.copy(positions.tensor(), Tensor::view(positions_host.data(), DType::i32, {n}));

  Buffer hidden(backend_, DType::f32, {n, c.hidden_size});
  Buffer normed(backend_, DType::f32, {n, c.hidden_size});
  Buffer branch(backend_, DType::f32, {n, c.hidden_size});
  const Tensor& h = hidden.tensor();
  const auto eps = static_cast<float>(c.rms_norm_eps);
  backend_.embedding(weights_.embed_tokens, ids.tensor(), h);
  const RouterConfig router{static_cast<int>(c.num_experts),
                            static_cast<int>(c.num_experts_per_token), c.norm_topk_prob};
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    const LayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
    backend_.rms_norm(h, w.input_norm, eps, normed.tensor());
    attention_block(layer, normed.tensor(), positions.tensor(), cache, branch.tensor());
    backend_.add(h, branch.tensor(), h);
    backend_.rms_norm(h, w.post_attention_norm, eps, normed.tensor());
    if (w.is_moe) {
      moe_forward(backend_, normed.tensor(), w.moe, router, branch.tensor());
    } else {
      ffn_forward(backend_, normed.tensor(), w.mlp, branch.tensor());
    }
    backend_.add(h, branch.tensor(), h);
  }
  cache.advance(n);

  const int64_t rows = logits.shape[0];
  const Tensor last = h.rows(n - rows, rows);
  const Tensor last_normed = normed.tensor().rows(0, rows);
  backend_.rms_norm(last, weights_.final_norm, eps, last_normed);
  backend_.matmul(last_normed, weights_.lm_head, nullptr, logits);
}

}  // namespace hive
