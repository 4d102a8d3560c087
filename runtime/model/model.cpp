#include "runtime/model/model.hpp"

#include <cmath>
#include <vector>

#include "base/error.hpp"
#include "kernels/step_attention_plan.hpp"
#include "moe/expert_parallel.hpp"
#include "runtime/model/rope.hpp"
#include "runtime/model/tensor_parallel.hpp"

namespace hive {

namespace {

const Tensor* optional_ptr(const std::optional<Tensor>& t) {
  return t ? &*t : nullptr;
}

constexpr Op kRequiredOps[] = {Op::embedding,
                               Op::rms_norm,
                               Op::rope,
                               Op::matmul,
                               Op::add,
                               Op::mul_rows,
                               Op::silu_mul,
                               Op::sigmoid,
                               Op::softmax,
                               Op::topk,
                               Op::normalize_rows,
                               Op::paged_attention,
                               Op::gather_rows,
                               Op::scatter_add_rows,
                               Op::reshape_and_cache,
                               Op::fill};

}  // namespace

// The batch's integer inputs on the backend, uploaded once per forward pass.
struct Model::DeviceBatch {
  Buffer token_ids, positions, logits_rows, slot_mapping;
  StepAttentionPlan attention;  // planned once, read by every layer
};

Model::Model(const std::filesystem::path& dir, Backend& backend, const LoadOptions& options)
    : dir_(dir),
      options_(options),
      config_(load_model_config(dir)),
      store_(dir, config_, options),
      weights_(bind_weights(config_, store_)),
      backend_(backend) {
  // Decided (docs/design/loader.md, "GGUF in"): no silent bf16 copies of a quantized
  // file on a backend without quantized matmuls, which would cost 2-4x its
  // memory; dequantizing is asked for by name.
  const std::string quantized = store_.first_quantized();
  check(quantized.empty() || backend.takes_quantized_weights(), dir.string(), ": tensor ",
        quantized, " is quantized, and the ", backend.name(),
        " backend has no quantized matmul; load with --dequantize (LoadOptions::dequantize) to "
        "run bf16 copies");
  // FP8 weights carry host pointers to their scales (Tensor::block_scales),
  // and only the CPU backend's matmul reads them.
  const std::string fp8 = store_.first_fp8();
  check(fp8.empty() || backend.device() == Device::cpu, dir.string(), ": tensor ", fp8,
        " is FP8 (f8_e4m3 with block scales), which only the CPU backend runs; the ",
        backend.name(), " backend has no FP8 matmul");
  check(backend.device() == Device::cpu, "models on a ", backend.name(),
        " backend need weight upload, which is not implemented yet");
  const std::vector<float> inv_freq = rope_inv_freq(config_.rope, config_.head_dim);
  inv_freq_ = upload<float>(backend, inv_freq, DType::f32);
  if (config_.mla)
    for (const LayerWeights& layer : weights_.layers)
      mla_.emplace_back(backend, config_, *layer.attention.mla);
}

Model::Model(const std::filesystem::path& dir, Backend& backend, Communicator& tensor_parallel,
             const LoadOptions& options)
    : Model(dir, backend, options) {
  const int size = tensor_parallel.world_size();
  if (size == 1) return;
  shard_weights(config_, tensor_parallel.rank(), size, weights_, backend_, shards_);
  config_ = tensor_parallel_config(config_, size);
  tp_ = &tensor_parallel;
}

std::span<const Op> Model::required_ops() {
  return kRequiredOps;
}

void Model::attention_block(int64_t layer, const Tensor& x, const DeviceBatch& device,
                            PagedKVCache& cache, const Tensor& out) {
  if (config_.mla) {
    mla_[static_cast<size_t>(layer)].forward(x, device.positions.tensor(),
                                             device.slot_mapping.tensor(), device.attention.plan(),
                                             cache.keys(layer), out);
    return;
  }
  const ModelConfig& c = config_;
  const AttentionWeights& w = weights_.layers[static_cast<size_t>(layer)].attention;
  const int64_t n = x.shape[0];
  Buffer q(backend_, DType::f32, {n, c.num_heads, c.head_dim});
  Buffer k(backend_, DType::f32, {n, c.num_kv_heads, c.head_dim});
  Buffer v(backend_, DType::f32, {n, c.num_kv_heads, c.head_dim});
  const MatmulProblem qkv[] = {
      {x, w.q_proj, optional_ptr(w.q_bias), q.view(DType::f32, {n, c.q_size()})},
      {x, w.k_proj, optional_ptr(w.k_bias), k.view(DType::f32, {n, c.kv_size()})},
      {x, w.v_proj, optional_ptr(w.v_bias), v.view(DType::f32, {n, c.kv_size()})}};
  backend_.matmul_group(qkv);
  if (w.q_norm) {
    const Tensor q_rows = q.view(DType::f32, {n * c.num_heads, c.head_dim});
    const Tensor k_rows = k.view(DType::f32, {n * c.num_kv_heads, c.head_dim});
    backend_.rms_norm(q_rows, *w.q_norm, static_cast<float>(c.rms_norm_eps), q_rows);
    backend_.rms_norm(k_rows, *w.k_norm, static_cast<float>(c.rms_norm_eps), k_rows);
  }
  backend_.rope(q.tensor(), device.positions.tensor(), inv_freq_.tensor());
  backend_.rope(k.tensor(), device.positions.tensor(), inv_freq_.tensor());
  // Every token's K/V is written before any sequence attends, so a run may
  // read blocks another run of this batch fills (a same-step prefix hit).
  backend_.reshape_and_cache(k.tensor(), v.tensor(), device.slot_mapping.tensor(),
                             cache.keys(layer), cache.values(layer));

  Buffer attended(backend_, DType::f32, {n, c.num_heads, c.head_dim});
  PagedAttentionParams params;
  params.q = q.tensor();
  params.k_blocks = cache.keys(layer);
  params.v_blocks = cache.values(layer);
  params.out = attended.tensor();
  params.plan = device.attention.plan();
  params.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  params.sliding_window = c.sliding_window;
  backend_.paged_attention(params);
  backend_.matmul(attended.view(DType::f32, {n, c.q_size()}), w.o_proj, optional_ptr(w.o_bias),
                  out);
}

RouterConfig Model::router_config() const {
  return hive::router_config(config_);
}

RouterConfig router_config(const ModelConfig& config) {
  RouterConfig r{static_cast<int>(config.num_experts),
                 static_cast<int>(config.num_experts_per_token), config.norm_topk_prob};
  if (const auto& g = config.grouped_routing) {
    r.rule = g->softmax ? RoutingRule::grouped_softmax : RoutingRule::grouped_sigmoid;
    r.n_group = static_cast<int>(g->n_group);
    r.topk_group = static_cast<int>(g->topk_group);
    r.routed_scaling_factor = static_cast<float>(g->routed_scaling_factor);
  }
  return r;
}

void Model::moe_block(int64_t layer, const Tensor& x, const ExpertParallelContext* ep,
                      const Tensor& out) {
  const MoeWeights& w = weights_.layers[static_cast<size_t>(layer)].moe;
  if (!ep) {
    moe_forward(backend_, x, w, router_config(), out);
    return;
  }
  check(ep->comm && ep->placement, "forward: expert-parallel context without a communicator");
  // This layer's counts of [layer][expert] statistics, created on first use.
  const auto counts_of = [&](std::vector<std::vector<int64_t>>* per_layer) {
    if (!per_layer) return static_cast<std::vector<int64_t>*>(nullptr);
    per_layer->resize(static_cast<size_t>(config_.num_layers));
    std::vector<int64_t>& counts = (*per_layer)[static_cast<size_t>(layer)];
    counts.resize(static_cast<size_t>(config_.num_experts), 0);
    return &counts;
  };
  moe_forward_expert_parallel(backend_, *ep->comm, *ep->placement, x, w, router_config(), out,
                              counts_of(ep->expert_load), counts_of(ep->expert_remote));
}

void Model::forward_idle(const ExpertParallelContext& ep) {
  // Zero-row activations: the layer routes nothing, sends nothing, and still
  // joins both all-to-alls (and computes rows its peers send here).
  Buffer none(backend_, DType::f32, {0, config_.hidden_size});
  Buffer out(backend_, DType::f32, {0, config_.hidden_size});
  for (int64_t layer = 0; layer < config_.num_layers; ++layer)
    if (weights_.layers[static_cast<size_t>(layer)].is_moe)
      moe_block(layer, none.tensor(), &ep, out.tensor());
}

void Model::forward(const ForwardBatch& batch, PagedKVCache& cache, const Tensor& logits,
                    const ExpertParallelContext* ep) {
  const ModelConfig& c = config_;
  const int64_t n = batch.num_tokens();
  const auto rows = static_cast<int64_t>(batch.logits_rows.size());
  if (n == 0 && ep) {
    check(rows == 0, "forward: logits rows without tokens");
    forward_idle(*ep);
    return;
  }
  check(n >= 1, "forward: no tokens");
  check(!(tp_ && ep), "forward: tensor and expert parallelism together are not supported");
  check(cache.num_layers() == c.num_layers, "forward: the KV cache has ", cache.num_layers(),
        " layers, the model ", c.num_layers);
  check(logits.ndim == 2 && logits.shape[0] == rows && logits.shape[1] == c.vocab_size,
        "forward: logits ", logits.shape_text(), " for ", rows, " rows and vocab ", c.vocab_size);
  for (const int32_t id : batch.token_ids)
    check(id >= 0 && id < c.vocab_size, "forward: token id ", id, " is out of range [0, ",
          c.vocab_size, ")");
  for (const int32_t row : batch.logits_rows)
    check(row >= 0 && row < n, "forward: logits row ", row, " outside the ", n, " tokens");
  // Every token needs a position and a cache slot and belongs to exactly one
  // run: a token outside the runs would leave its attention output unset.
  check(static_cast<int64_t>(batch.positions.size()) == n &&
            static_cast<int64_t>(batch.slot_mapping.size()) == n,
        "forward: ", n, " tokens with ", batch.positions.size(), " positions and ",
        batch.slot_mapping.size(), " slots");
  int64_t covered = 0;
  for (const SequenceRun& run : batch.runs) {
    check(run.first_token == covered && run.num_tokens >= 1, "forward: the run at token ",
          run.first_token, " (", run.num_tokens, " tokens) does not follow the previous ones, ",
          "which end at token ", covered);
    covered += run.num_tokens;
  }
  check(covered == n, "forward: the runs cover ", covered, " of the ", n, " tokens");
  // Checked here, on the host, once per step: a device's reshape_and_cache
  // does not check what it is given.
  const int64_t num_slots = int64_t{cache.num_blocks()} * cache.block_size();
  for (const int64_t slot : batch.slot_mapping)
    check(slot >= 0 && slot < num_slots, "forward: slot ", slot, " outside the cache's ", num_slots,
          " slots");

  std::vector<PlannedSequence> sequences;
  for (const SequenceRun& run : batch.runs)
    sequences.push_back({run.num_tokens, run.start_position + run.num_tokens, run.block_table});
  DeviceBatch device{
      upload<int32_t>(backend_, batch.token_ids, DType::i32),
      upload<int32_t>(backend_, batch.positions, DType::i32),
      upload<int32_t>(backend_, batch.logits_rows, DType::i32),
      upload<int64_t>(backend_, batch.slot_mapping, DType::i64),
      StepAttentionPlan(backend_, sequences, cache.num_blocks(), cache.block_size())};

  Buffer hidden(backend_, DType::f32, {n, c.hidden_size});
  Buffer normed(backend_, DType::f32, {n, c.hidden_size});
  Buffer branch(backend_, DType::f32, {n, c.hidden_size});
  const Tensor& h = hidden.tensor();
  const auto eps = static_cast<float>(c.rms_norm_eps);
  backend_.embedding(weights_.embed_tokens, device.token_ids.tensor(), h);
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    const LayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
    backend_.rms_norm(h, w.input_norm, eps, normed.tensor());
    attention_block(layer, normed.tensor(), device, cache, branch.tensor());
    if (tp_) tp_->all_reduce_sum(branch.tensor());  // the heads' partial o_proj sums
    backend_.add(h, branch.tensor(), h);
    backend_.rms_norm(h, w.post_attention_norm, eps, normed.tensor());
    if (w.is_moe) {
      moe_block(layer, normed.tensor(), ep, branch.tensor());
    } else {
      ffn_forward(backend_, normed.tensor(), w.mlp, branch.tensor());
    }
    if (tp_) tp_->all_reduce_sum(branch.tensor());  // the intermediate slices' partial sums
    backend_.add(h, branch.tensor(), h);
  }
  if (rows == 0) return;
  const Tensor picked = branch.tensor().rows(0, rows);
  const Tensor picked_normed = normed.tensor().rows(0, rows);
  backend_.gather_rows(h, device.logits_rows.tensor(), picked);
  backend_.rms_norm(picked, weights_.final_norm, eps, picked_normed);
  backend_.matmul(picked_normed, weights_.lm_head, nullptr, logits);
}

}  // namespace hive
