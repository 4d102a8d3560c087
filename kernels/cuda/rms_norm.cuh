#pragma once
// RMSNorm on the GPU. One block per row; each thread strides over the row,
// the block reduces the sum of squares in shared memory. Traffic per row:
// read x (4·dim B) + weight (2–4·dim B, L2-resident across rows), write
// 4·dim B, so the kernel is bandwidth-bound at ~8–12 bytes per element.
#include <cstdint>

#include <cuda_runtime.h>

namespace hive::cuda {

// .cu files build as C++17 (what CMake 3.25 can ask of nvcc), so they
// keep their own small enum instead of including kernels/dtype.hpp.
enum class WeightType { f32, f16, bf16 };

struct RmsNormParams {
  const float* x;      // [rows, dim]
  const void* weight;  // [dim], f32 / f16 / bf16
  WeightType weight_type;
  float* out;  // [rows, dim]; may alias x
  int64_t rows;
  int64_t dim;
  float eps;
};

cudaError_t launch_rms_norm(const RmsNormParams& params, cudaStream_t stream);

}  // namespace hive::cuda
