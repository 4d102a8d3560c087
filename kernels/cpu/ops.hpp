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
// on the scalar path. Either way out[i, j]'s bits depend only on x[i, :],
// w[j, :], bias[j] and the path, never on m or the thread count.
void matmul(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& out);
void matmul_reference(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& out);
void add(const Tensor& a, const Tensor& b, const Tensor& out);
void mul_rows(const Tensor& x, const Tensor& scale);
void silu_mul(const Tensor& gate, const Tensor& up, const Tensor& out);
void sigmoid(const Tensor& x);
void softmax(const Tensor& x);
void topk(const Tensor& x, int k, const Tensor& values, const Tensor& indices);
void normalize_rows(const Tensor& x);
void attention(const AttentionParams& p);
void paged_attention(const PagedAttentionParams& p);
void gather_rows(const Tensor& src, const Tensor& index, const Tensor& out);
void scatter_add_rows(const Tensor& src, const Tensor& index, const Tensor& weight,
                      const Tensor& out);

// Shape checks shared by the ops (and by other backends' launchers).
void expect(const Tensor& t, DType dtype, int ndim, const char* what);
void expect_float(const Tensor& t, int ndim, const char* what);

}  // namespace hive::cpu
