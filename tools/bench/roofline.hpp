#pragma once
// The rooflines of the benchmark programs. A decode step at batch 1 reads
// every active weight once (plus the KV cache), so tokens/s <= read
// bandwidth / bytes per token. A row of many tokens per step (a prompt, many
// sequences) is bound by the larger of its bytes / bandwidth and its FLOP /
// the arithmetic peak (compute_peak.hpp). Both are probed in the benchmark's
// own run: the bandwidth by summing a buffer far larger than the caches with
// the threads the model uses.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <vector>

#include "runtime/model/model.hpp"
#include "runtime/model/model_stats.hpp"

namespace hive::bench {

// Best of several passes of a parallel read of `bytes` bytes; bytes/s.
inline double probe_read_bandwidth(size_t bytes = size_t{1} << 30) {
  std::vector<uint64_t> buffer(bytes / sizeof(uint64_t));
  std::iota(buffer.begin(), buffer.end(), 0);  // touch every page
  double best = 0;
  volatile uint64_t sink = 0;
  for (int pass = 0; pass < 5; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    uint64_t total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static)
    for (size_t i = 0; i < buffer.size(); ++i) total += buffer[i];
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    sink = sink + total;
    best = std::max(best, static_cast<double>(bytes) / seconds);
  }
  return best;
}

// Weight bytes one decode token reads: the active parameters at their stored
// width, minus the embedding table (one row is read, not the table) unless
// it is tied to the output projection.
inline double decode_weight_bytes_per_token(const Model& model) {
  const ModelStats stats = model_stats(model.config(), model.weights());
  const ModelConfig& c = model.config();
  const double bytes_per_param =
      static_cast<double>(stats.weight_bytes) / static_cast<double>(stats.total_parameters);
  double bytes = static_cast<double>(stats.active_parameters) * bytes_per_param;
  if (!c.tie_word_embeddings)
    bytes -= static_cast<double>(c.vocab_size * c.hidden_size) * bytes_per_param;
  return bytes;
}

// What a model's tokens cost, for the rows' rooflines. FLOP count the
// matmuls (2 per multiply-add) and the attention's two products; norms,
// activations and the router's choice are left out.
struct ModelArithmetic {
  double body_flops_per_token = 0;     // the active weights but the embedding and lm_head
  double logits_flops = 0;             // lm_head, per row of logits
  double attention_flops_per_key = 0;  // per (query token, context token) pair, all layers
  double weight_bytes = 0;             // every weight a full step reads: all but the embedding
  double kv_bytes_per_key = 0;         // KV read per (query token, context token), bf16
};

inline ModelArithmetic model_arithmetic(const Model& model) {
  const ModelStats stats = model_stats(model.config(), model.weights());
  const ModelConfig& c = model.config();
  const double bytes_per_param =
      static_cast<double>(stats.weight_bytes) / static_cast<double>(stats.total_parameters);
  const double table = static_cast<double>(c.vocab_size * c.hidden_size);
  ModelArithmetic a;
  a.logits_flops = 2 * table;
  a.body_flops_per_token =
      2 * (static_cast<double>(stats.active_parameters) - (c.tie_word_embeddings ? 1 : 2) * table);
  const double qk_dim = static_cast<double>(c.mla ? c.mla->qk_head_dim() : c.head_dim);
  const double v_dim = static_cast<double>(c.mla ? c.mla->v_head_dim : c.head_dim);
  const auto layers = static_cast<double>(c.num_layers);
  a.attention_flops_per_key = layers * static_cast<double>(c.num_heads) * 2 * (qk_dim + v_dim);
  a.weight_bytes = static_cast<double>(stats.weight_bytes) -
                   (c.tie_word_embeddings ? 0 : table * bytes_per_param);
  a.kv_bytes_per_key = c.mla ? layers * static_cast<double>(c.mla->latent_dim()) * 2
                             : layers * 2 * static_cast<double>(c.num_kv_heads * c.head_dim) * 2;
  return a;
}

// A P-token prompt in one step, logits for its last token: tokens/s at the
// roofline. The weights are read once.
inline double prefill_roofline(const ModelArithmetic& a, int64_t prompt, double bandwidth,
                               double peak) {
  const auto p = static_cast<double>(prompt);
  const double flops =
      p * a.body_flops_per_token + a.logits_flops + a.attention_flops_per_key * p * (p + 1) / 2;
  return p / std::max(flops / peak, a.weight_bytes / bandwidth);
}

// B sequences decoding together, each step one token of each with logits,
// after `prompt` tokens each, for `steps` steps: tokens/s of the steps at
// the roofline. Each step reads the weights once (at B >= 16 a MoE layer's
// tokens reach nearly every expert) and every sequence's KV.
inline double batch_decode_roofline(const ModelArithmetic& a, int64_t batch, int64_t prompt,
                                    int64_t steps, double bandwidth, double peak) {
  const auto b = static_cast<double>(batch);
  const double context = static_cast<double>(prompt) + static_cast<double>(steps + 1) / 2;
  const double flops =
      b * (a.body_flops_per_token + a.logits_flops + a.attention_flops_per_key * context);
  const double bytes = a.weight_bytes + b * context * a.kv_bytes_per_key;
  return b / std::max(flops / peak, bytes / bandwidth);
}

}  // namespace hive::bench
