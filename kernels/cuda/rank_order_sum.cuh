#pragma once
// The add of a rank-order all-reduce on the GPU (parallel/nccl_rank_group.cpp):
// out[i] = 0 + parts[0][i] + parts[1][i] + ... + parts[num_parts - 1][i],
// f32 adds in exactly that order, so the sum has the bits of InProcessGroup's
// host loop. parts is num_parts rows of part_size floats, one row per rank.
// Reads num_parts x 4 B and writes 4 B per element: bandwidth-bound.
#include <cstdint>

#include <cuda_runtime.h>

namespace hive::cuda {

cudaError_t launch_rank_order_sum(const float* parts, int num_parts, int64_t part_size, float* out,
                                  cudaStream_t stream);

}  // namespace hive::cuda
