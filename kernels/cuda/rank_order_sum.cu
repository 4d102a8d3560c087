#include "kernels/cuda/rank_order_sum.cuh"

namespace hive::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

// One thread per element, the ranks in order: no multiply, so nothing for
// the compiler to contract, and no reassociation without fast-math.
__global__ void rank_order_sum_kernel(const float* parts, int num_parts, int64_t part_size,
                                      float* out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < part_size;
       i += stride) {
    float sum = 0.0f;
    for (int r = 0; r < num_parts; ++r) sum += parts[r * part_size + i];
    out[i] = sum;
  }
}

}  // namespace

cudaError_t launch_rank_order_sum(const float* parts, int num_parts, int64_t part_size, float* out,
                                  cudaStream_t stream) {
  if (part_size == 0) return cudaSuccess;
  const int64_t blocks = (part_size + kThreads - 1) / kThreads;
  const dim3 grid(static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks));
  rank_order_sum_kernel<<<grid, kThreads, 0, stream>>>(parts, num_parts, part_size, out);
  return cudaGetLastError();
}

}  // namespace hive::cuda
