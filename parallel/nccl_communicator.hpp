#pragma once
// NCCL collectives for ranks that are GPUs of this process (one worker per
// device). Built whenever CUDA is; exercised when a device is present.
#include <memory>
#include <span>
#include <vector>

#include "parallel/communicator.hpp"

namespace hive {

// One communicator per device in `devices`, rank i on devices[i]
// (ncclCommInitAll). Collectives run on the default stream of the calling
// thread's device and complete before returning.
std::vector<std::unique_ptr<Communicator>> make_nccl_group(std::span<const int> devices);

}  // namespace hive
