#pragma once
// The Backend interface: memory, copies and the ops a decoder step needs.
// Every op has a plain CPU reference (cpu/); every other implementation is
// tested against it op by op (tests/kernels/). Tensors are views; outputs are
// passed as views too and written in place. Activations are f32; weights may
// be f32, f16 or bf16 and are converted as they are read, and on a backend
// that takes_quantized_weights() also ggml blocks (dtype q8_0 .. q6_k) in
// matmul, matmul_group and embedding.
#include <cstddef>
#include <span>
#include <string_view>

#include "kernels/attention_plan.hpp"
#include "kernels/tensor.hpp"

namespace hive {

enum class Op : uint8_t {
  embedding,
  rms_norm,
  rope,
  matmul,
  matmul_group,
  add,
  mul_rows,
  silu_mul,
  sigmoid,
  softmax,
  topk,
  normalize_rows,
  attention,
  paged_attention,
  gather_rows,
  scatter_add_rows,
  reshape_and_cache,
  fill,
  count,
};

std::string_view op_name(Op op);

// Causal attention of a run of query tokens of one sequence over its KV cache.
//
//   k_cache/v_cache: [capacity, num_kv_heads, head_dim]; rows 0..context_len-1
//   are valid, where context_len = start_position + num_tokens (the queries'
//   own keys are already written). Query i sits at position start_position + i
//   and sees keys 0..start_position + i (the last sliding_window of them when
//   sliding_window > 0). Query heads map to KV heads in groups (GQA):
//   kv_head = head / (num_heads / num_kv_heads).
struct AttentionParams {
  Tensor q;  // [num_tokens, num_heads, head_dim] f32
  Tensor k_cache;
  Tensor v_cache;
  Tensor out;  // [num_tokens, num_heads, head_dim] f32
  int64_t start_position = 0;
  float scale = 1.0f;
  int64_t sliding_window = 0;
};

// Batched varlen paged attention: every sequence of a step in one call,
// reading K/V through block tables (PagedAttention) as the step's
// AttentionPlan (attention_plan.hpp) lays them out. One layer's cache is a
// pool of blocks:
//
//   k_blocks/v_blocks [num_blocks, block_size, num_kv_heads, head_dim],
//   f32 or bf16 (widened as read; the arithmetic is f32), or on a backend
//   that takes them (takes_kv_cache_dtype) i8 or f8_e4m3 rows of head_dim
//   codes and their f32 scale, [..., head_dim + 4] (kernels/kv_quant.hpp),
//   dequantized as read
//   sequence s, position t  ->  block tables[table_start[s] + t / block_size],
//                               row t % block_size
//
//   q, out: the step's query tokens, sequence after sequence
//   [ s0: 4 prefill queries | s1: 1 decode query | s2: 3 queries ]
//   query_start = [0, 4, 5, 8]
//
// Sequence s's query i sits at position context_len[s] - num_queries + i and
// sees positions 0..that (the last sliding_window of them when > 0); the
// queries' own K/V must already be written. Table entries for positions no
// query sees (outside the sliding window) are not read. The plan was checked
// once when it was built, against a pool of plan.num_blocks blocks of
// plan.block_size; the op checks only that the pool is that one.
struct PagedAttentionParams {
  Tensor q;  // [num_tokens, num_heads, head_dim] f32
  Tensor k_blocks;
  Tensor v_blocks;
  Tensor out;  // [num_tokens, num_heads, head_dim] f32
  AttentionPlan plan;
  float scale = 1.0f;
  int64_t sliding_window = 0;
};

// One product of Backend::matmul_group: out = x @ w^T (+ bias), with
// matmul()'s shapes and dtypes.
struct MatmulProblem {
  Tensor x;
  Tensor w;
  const Tensor* bias = nullptr;
  Tensor out;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;
  virtual Device device() const = 0;
  virtual bool supports(Op op) const = 0;
  // Whether matmul, matmul_group and embedding take quantized weights (a
  // GGUF's blocks, dtype q8_0 .. q6_k) as they are; a model with such
  // weights on a backend that does not is refused at load, and can be
  // loaded dequantized (LoadOptions::dequantize).
  virtual bool takes_quantized_weights() const { return false; }
  // Whether paged_attention and reshape_and_cache take a KV cache of this
  // dtype: f32 and bf16 everywhere, the quantized rows of kv_quant.hpp (i8,
  // f8_e4m3) where a backend says so. A cache is refused at construction
  // on a backend that does not.
  virtual bool takes_kv_cache_dtype(DType dtype) const {
    return dtype == DType::f32 || dtype == DType::bf16;
  }
  // Bytes of memory on the device this backend allocates from (the host's
  // memory for the CPU): what a KV budget's memory fraction is a share of.
  virtual int64_t memory_bytes() const = 0;
  // Bytes free on that device now (the host's MemAvailable for the CPU,
  // cudaMemGetInfo's free on a GPU): what a default KV budget is a share of,
  // read once the weights are loaded.
  virtual int64_t free_memory_bytes() const = 0;

  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* ptr) = 0;
  // Copies a contiguous tensor into another of the same size and dtype; either
  // side may live on the host or on this backend's device.
  virtual void copy(const Tensor& dst, const Tensor& src) = 0;
  virtual void synchronize() = 0;

  // out[i] = table[ids[i]]. table [vocab, dim], ids [n] i32, out [n, dim] f32.
  virtual void embedding(const Tensor& table, const Tensor& ids, const Tensor& out) = 0;
  // out = x / sqrt(mean(x^2) + eps) * weight, per row. x, out [n, dim]; may alias.
  virtual void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) = 0;
  // Rotary embedding in place, rotate-half layout. x [n, heads, head_dim],
  // positions [n] i32, inv_freq [head_dim / 2] f32.
  virtual void rope(const Tensor& x, const Tensor& positions, const Tensor& inv_freq) = 0;
  // out = x @ w^T (+ bias). x [m, k] f32, w [n, k], bias [n] or null, out [m, n] f32.
  virtual void matmul(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& out) = 0;
  // Several matmuls at once, each output bit for bit what matmul() gives it:
  // the projections of one x (q, k, v; gate, up) and the experts of an MoE
  // layer, which a backend may run as one job (the CPU backend: one job on
  // its thread pool, not one per product). Outputs must not overlap inputs.
  // The default runs them one after another.
  virtual void matmul_group(std::span<const MatmulProblem> problems);
  // out = a + b, elementwise; out may alias a or b.
  virtual void add(const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  // x[i, :] *= scale[i], in place. scale [n] f32.
  virtual void mul_rows(const Tensor& x, const Tensor& scale) = 0;
  // out = silu(gate) * up, elementwise.
  virtual void silu_mul(const Tensor& gate, const Tensor& up, const Tensor& out) = 0;
  // x = 1 / (1 + exp(-x)), in place.
  virtual void sigmoid(const Tensor& x) = 0;
  // Softmax of each row, in place.
  virtual void softmax(const Tensor& x) = 0;
  // The k largest of each row, in descending order; ties go to the lower index.
  // x [n, m], values [n, k] f32, indices [n, k] i32.
  virtual void topk(const Tensor& x, int k, const Tensor& values, const Tensor& indices) = 0;
  // x[i, :] /= sum(x[i, :]), in place.
  virtual void normalize_rows(const Tensor& x) = 0;
  virtual void attention(const AttentionParams& params) = 0;
  // One call per layer per step for all sequences (see PagedAttentionParams).
  virtual void paged_attention(const PagedAttentionParams& params) = 0;
  // out[i] = src[index[i]]. src [n, d], index [m] i32, out [m, d].
  virtual void gather_rows(const Tensor& src, const Tensor& index, const Tensor& out) = 0;
  // out[index[i]] += weight[i] * src[i]. src [m, d], index [m] i32, weight [m] f32.
  virtual void scatter_add_rows(const Tensor& src, const Tensor& index, const Tensor& weight,
                                const Tensor& out) = 0;
  // A step's new K/V into the paged cache (vLLM's reshape_and_cache): token
  // i's rows go to slot slot_mapping[i], i.e. block slot / block_size, row
  // slot % block_size, converted to the cache's dtype (f32, bf16, or
  // quantized per row with its scale) as they are stored. k, v [n,
  // num_kv_heads, head_dim] f32; slot_mapping [n] i64, distinct slots;
  // k_blocks, v_blocks as in PagedAttentionParams.
  virtual void reshape_and_cache(const Tensor& k, const Tensor& v, const Tensor& slot_mapping,
                                 const Tensor& k_blocks, const Tensor& v_blocks) = 0;
  // x[...] = value. x f32, contiguous.
  virtual void fill(const Tensor& x, float value) = 0;
};

}  // namespace hive
