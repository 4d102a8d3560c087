#pragma once
// fill on the GPU: x[i] = value over n f32 elements, a grid-stride loop.
// Write-only, 4 B per element: bandwidth-bound.
#include <cstdint>

#include <cuda_runtime.h>

namespace hive::cuda {

cudaError_t launch_fill(float* x, int64_t n, float value, cudaStream_t stream);

}  // namespace hive::cuda
