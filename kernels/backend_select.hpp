#pragma once
// Picks the backend a model runs on.
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "kernels/backend.hpp"

namespace hive {

struct BackendChoice {
  std::unique_ptr<Backend> backend;
  std::string note;  // one line saying why, when the choice was not the one asked for
};

// device: "auto", "cpu" or "cuda". "auto" takes the first CUDA device when
// one is present and its backend has every op in `needed`, else the CPU.
// "cuda" fails with a clear error when that is impossible.
BackendChoice select_backend(std::string_view device, std::span<const Op> needed);

// What the build and the machine offer: "cpu; CUDA runtime 13.0, ... ; 0 devices".
std::string describe_devices();

}  // namespace hive
