#include "kernels/cuda/fill.cuh"

namespace hive::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

__global__ void fill_kernel(float* x, int64_t n, float value) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    x[i] = value;
}

}  // namespace

cudaError_t launch_fill(float* x, int64_t n, float value, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  const dim3 grid(static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks));
  fill_kernel<<<grid, kThreads, 0, stream>>>(x, n, value);
  return cudaGetLastError();
}

}  // namespace hive::cuda
