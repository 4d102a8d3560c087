#pragma once
// Multi-head latent attention (DeepSeek-V2/V3), run in the absorbed-weight
// form over a paged cache of latents.
//
// Per token and layer the cache holds one row of kv_lora_rank + rope
// values, shared by every head: the latent c (kv_a_proj's first
// kv_lora_rank outputs after kv_a_layernorm) and the roped key part k_pe.
// It is stored as one "KV head" of that width in the key blocks; there are
// no value blocks (the latent is the value too). The row's layout lets the
// ordinary rotate-half rope op rotate k_pe alone:
//
//   [ c[0 : r/2] | pe[0 : p/2] | c[r/2 : r] | pe[p/2 : p] ]     r = kv_lora_rank
//     rope pairs (i, i + (r+p)/2): c with c at frequency 0     p = qk_rope_head_dim
//     (cos 1, sin 0: exact identity), pe with pe at its own frequency
//
// Absorbed form (DeepSeek-V2 paper, appendix): with W_UK, W_UV the per-head
// slices of kv_b_proj,
//   score(t) = q_nope·(W_UK c_t) + q_pe·k_pe_t = (W_UK^T q_nope | q_pe)·(c_t | k_pe_t)
//   out      = W_UV Σ_t p_t c_t
// so every head's query is mapped into the row's space once (one matmul per
// head), attention runs as MQA over the cached rows with the paged op, and
// the latent output goes through W_UV per head; K and V are never expanded.
// MlaReference (mla_reference.hpp) is the plain expanded form this is tested
// against.
#include <optional>
#include <vector>

#include "kernels/attention_plan.hpp"
#include "kernels/backend.hpp"
#include "kernels/buffer.hpp"
#include "runtime/loader/model_config.hpp"

namespace hive {

struct MlaWeights {
  std::optional<Tensor> q_proj;  // [heads * qk_head_dim, hidden], no q_lora_rank
  std::optional<Tensor> q_a_proj, q_a_norm, q_b_proj;  // with q_lora_rank
  Tensor kv_a_proj;                                    // [kv_lora_rank + rope, hidden]
  Tensor kv_a_norm;                                    // [kv_lora_rank]
  Tensor kv_b_proj;  // [heads * (qk_nope + v_head_dim), kv_lora_rank]
  Tensor o_proj;     // [hidden, heads * v_head_dim]
};

// Where the MLA cache row puts latent index a and rope index j (after
// de-interleaving), as drawn above.
int64_t mla_latent_column(const MlaConfig& mla, int64_t a);
int64_t mla_rope_column(const MlaConfig& mla, int64_t j);
// The rope index (0..p-1) of the checkpoint's layout that becomes
// rotate-half index j: interleaved pairs are de-interleaved, as
// transformers' apply_rotary_pos_emb_interleave does.
int64_t mla_rope_source(const MlaConfig& mla, int64_t j);
// qk_head_dim^-1/2, times YaRN's mscale(mscale_all_dim)^2 as transformers applies it.
float mla_softmax_scale(const ModelConfig& config);

// The queries of a batch in the row space, [n, heads, latent_dim], roped;
// and the batch's own cache rows [n, 1, latent_dim], roped. Shared by the
// absorbed form and its reference.
struct MlaProjections {
  Buffer queries;
  Buffer rows;
};

class MlaAttention {
 public:
  // Prepares the per-head absorbed weights (f32 copies) from `weights`,
  // whose checkpoint must outlive this.
  MlaAttention(Backend& backend, const ModelConfig& config, const MlaWeights& weights);

  // q and the cache rows of x [n, hidden] at `positions` [n] i32.
  MlaProjections project(const Tensor& x, const Tensor& positions) const;
  // Writes the batch's rows into `cache_blocks` [blocks, block_size, 1,
  // latent_dim] at slot_mapping, attends over the plan's sequences and
  // writes o_proj's output to out [n, hidden].
  void forward(const Tensor& x, const Tensor& positions, const Tensor& slot_mapping,
               const AttentionPlan& plan, const Tensor& cache_blocks, const Tensor& out) const;
  // out [n, hidden] = o_proj(W_UV per head of the latent outputs [n, heads, latent_dim]).
  void output(const Tensor& attended, const Tensor& out) const;

  const MlaWeights& weights() const { return weights_; }

 private:
  // Row h*n + i of the result is i*heads + h: token i's row of head h.
  Buffer head_rows(int64_t n) const;

  Backend& backend_;
  ModelConfig config_;
  MlaWeights weights_;            // views into the checkpoint
  std::vector<Buffer> absorb_q_;  // per head [latent_dim, qk_head_dim]
  std::vector<Buffer> absorb_v_;  // per head [v_head_dim, latent_dim]
  Buffer rope_row_;               // [latent_dim, hidden]: k_pe's projection placed in the row
  Buffer latent_place_;           // [latent_dim, kv_lora_rank]: c placed in the row (0/1)
  Buffer inv_freq_;               // [latent_dim / 2]: 0 for the latent pairs
  float scale_;
};

}  // namespace hive
