#include <cuda_bf16.h>

#include "kernels/cuda/reshape_and_cache.cuh"

namespace hive::cuda {
namespace {

constexpr int kThreads = 128;

__device__ void store(float* dst, float value) {
  *dst = value;
}
__device__ void store(__nv_bfloat16* dst, float value) {
  *dst = __float2bfloat16_rn(value);
}

template <class C>
__global__ void reshape_and_cache_kernel(const float* k, const float* v, const int64_t* slots,
                                         C* k_blocks, C* v_blocks, int64_t row) {
  const int64_t token = blockIdx.x, slot = slots[token];
  const float* ks = k + token * row;
  const float* vs = v + token * row;
  C* kd = k_blocks + slot * row;
  C* vd = v_blocks + slot * row;
  for (int64_t j = threadIdx.x; j < row; j += blockDim.x) {
    store(kd + j, ks[j]);
    store(vd + j, vs[j]);
  }
}

}  // namespace

cudaError_t launch_reshape_and_cache(const ReshapeAndCacheParams& p, cudaStream_t stream) {
  if (p.num_tokens == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(p.num_tokens)), block(kThreads);
  if (p.cache_type == CacheType::f32) {
    reshape_and_cache_kernel<<<grid, block, 0, stream>>>(p.k, p.v, p.slot_mapping,
                                                         static_cast<float*>(p.k_blocks),
                                                         static_cast<float*>(p.v_blocks), p.row);
  } else {
    reshape_and_cache_kernel<<<grid, block, 0, stream>>>(
        p.k, p.v, p.slot_mapping, static_cast<__nv_bfloat16*>(p.k_blocks),
        static_cast<__nv_bfloat16*>(p.v_blocks), p.row);
  }
  return cudaGetLastError();
}

}  // namespace hive::cuda
