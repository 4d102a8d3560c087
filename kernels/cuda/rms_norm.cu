#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/rms_norm.cuh"

namespace hive::cuda {
namespace {

constexpr int kThreads = 256;

template <class W>
__device__ float to_float(W value);
template <>
__device__ float to_float<float>(float value) {
  return value;
}
template <>
__device__ float to_float<__half>(__half value) {
  return __half2float(value);
}
template <>
__device__ float to_float<__nv_bfloat16>(__nv_bfloat16 value) {
  return __bfloat162float(value);
}

template <class W>
__global__ void rms_norm_kernel(const float* x, const W* weight, float* out, int64_t dim,
                                float eps) {
  __shared__ float partial[kThreads];
  const float* row = x + blockIdx.x * dim;
  float* out_row = out + blockIdx.x * dim;
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) sum += row[j] * row[j];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  const float inv = rsqrtf(partial[0] / static_cast<float>(dim) + eps);
  for (int64_t j = threadIdx.x; j < dim; j += blockDim.x)
    out_row[j] = to_float(weight[j]) * (row[j] * inv);
}

}  // namespace

cudaError_t launch_rms_norm(const RmsNormParams& p, cudaStream_t stream) {
  if (p.rows == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(p.rows)), block(kThreads);
  switch (p.weight_type) {
    case WeightType::f32:
      rms_norm_kernel<<<grid, block, 0, stream>>>(p.x, static_cast<const float*>(p.weight), p.out,
                                                  p.dim, p.eps);
      break;
    case WeightType::f16:
      rms_norm_kernel<<<grid, block, 0, stream>>>(p.x, static_cast<const __half*>(p.weight), p.out,
                                                  p.dim, p.eps);
      break;
    case WeightType::bf16:
      rms_norm_kernel<<<grid, block, 0, stream>>>(p.x, static_cast<const __nv_bfloat16*>(p.weight),
                                                  p.out, p.dim, p.eps);
      break;
  }
  return cudaGetLastError();
}

}  // namespace hive::cuda
