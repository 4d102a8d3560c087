#pragma once
// The CPU reference ops: plain loops, f32 math, parallel only across
// independent outputs so results do not depend on the thread count. They are
// the oracle every other implementation is tested against.
#include "kernels/backend.hpp"

namespace hive::cpu {

// Ops hand work to the thread pool only for at least this many
// multiply-adds. Below it (a small model's projections at batch 1) waking the
// pool costs more than it saves; results are the same either way (work is
// split by output, never within a sum).
inline constexpr int64_t kMinParallelWork = int64_t{1} << 18;

// Converts n elements of a float tensor's storage to f32.
void to_f32(const void* src, DType dtype, int64_t n, float* dst);

void embedding(const Tensor& table, const Tensor& ids, const Tensor& out);
void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out);
void rope(const Tensor& x, const Tensor& positions, const Tensor& inv_freq);
// The SIMD kernel of the CPU kernel path (cpu_features.hpp); the reference
// on the scalar path; quant_matmul for a quantized w. Either way out[i,
// j]'s bits depend only on x[i, :], w[j, :], bias[j] and the path, never
// on m or the thread count.
void matmul(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& out);
// matmul() of every problem, each with the same bits, in one job on the
// thread pool: the products' column tasks run as one list.
void matmul_group(std::span<const MatmulProblem> problems);
// w f32, f16, bf16 or f8_e4m3 (with block scales); a quantized w goes to
// matmul_group_quantized.
void matmul_reference(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& out);
// Problems whose w is quantized (dtype q8_0 .. q6_k): quant_matmul_group,
// which is its reference on the scalar path, plus the bias.
void matmul_group_quantized(std::span<const MatmulProblem> problems);
void add(const Tensor& a, const Tensor& b, const Tensor& out);
void mul_rows(const Tensor& x, const Tensor& scale);
void silu_mul(const Tensor& gate, const Tensor& up, const Tensor& out);
void sigmoid(const Tensor& x);
void softmax(const Tensor& x);
void topk(const Tensor& x, int k, const Tensor& values, const Tensor& indices);
void normalize_rows(const Tensor& x);
void attention(const AttentionParams& p);
// The batched varlen op (paged_attention_fast.cpp): online softmax over key
// tiles at fixed positions, so a query's bits depend only on its own keys.
// Contexts longer than kContextChunk positions are split at its multiples
// and merged by log-sum-exp (flash-decoding). The chunk is a constant, never
// derived from the batch or the thread count, so results do not depend on
// them; paged_attention_chunked takes another (a multiple of 32, or 0 for no
// split) for tests and benchmarks.
inline constexpr int64_t kContextChunk = 1024;
void paged_attention(const PagedAttentionParams& p);
void paged_attention_chunked(const PagedAttentionParams& p, int64_t context_chunk);

// The per-sequence paged attention the batched op is tested against: one
// sequence, its table checked on every call, and the contiguous reference's
// exact two-pass softmax (attend.hpp), so the two agree bit for bit.
struct SequencePagedAttentionParams {
  Tensor q;  // [num_tokens, num_heads, head_dim] f32
  Tensor k_blocks;
  Tensor v_blocks;
  Tensor block_table;  // [num_table_blocks] i32
  Tensor out;          // [num_tokens, num_heads, head_dim] f32
  int64_t start_position = 0;
  float scale = 1.0f;
  int64_t sliding_window = 0;
};
void paged_attention_sequence(const SequencePagedAttentionParams& p);
// The batched op's reference: a host loop of paged_attention_sequence over
// the plan's sequences (host memory), as the model ran before the plan.
void paged_attention_reference(const PagedAttentionParams& p);
void gather_rows(const Tensor& src, const Tensor& index, const Tensor& out);
void scatter_add_rows(const Tensor& src, const Tensor& index, const Tensor& weight,
                      const Tensor& out);
void reshape_and_cache(const Tensor& k, const Tensor& v, const Tensor& slot_mapping,
                       const Tensor& k_blocks, const Tensor& v_blocks);
void fill(const Tensor& x, float value);

// Shape checks shared by the ops (and by other backends' launchers).
void expect(const Tensor& t, DType dtype, int ndim, const char* what);
void expect_float(const Tensor& t, int ndim, const char* what);
// A float matmul weight [n, k]: f32, f16, bf16, or f8_e4m3 with its block
// scales (Tensor::block_scales).
void expect_matmul_weight(const Tensor& w);
// A paged KV cache's pair of pools: 4-d, contiguous, both f32 or both bf16.
void expect_kv_cache(const Tensor& k_blocks, const Tensor& v_blocks, const char* what);
// reshape_and_cache's shapes and dtypes (not the slots' range).
void check_kv_write(const Tensor& k, const Tensor& v, const Tensor& slot_mapping,
                    const Tensor& k_blocks, const Tensor& v_blocks);

}  // namespace hive::cpu
