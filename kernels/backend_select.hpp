#pragma once
// Picks the backend a model runs on.
#include <cstdint>
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

// Where a model runs: the first CUDA device when one is present and its
// backend has every op the model needs, else the CPU (automatic); or only
// there (cpu, cuda).
enum class DeviceChoice : uint8_t { automatic, cpu, cuda };

// "auto" | "cpu" | "cuda"; anything else throws hive::Error naming `what`.
DeviceChoice parse_device_choice(std::string_view name, std::string_view what);
std::string_view device_choice_name(DeviceChoice device);

// "cuda" fails with a clear error when that is impossible.
BackendChoice select_backend(DeviceChoice device, std::span<const Op> needed);

// What the build and the machine offer: "cpu; CUDA runtime 13.0, ... ; 0 devices".
std::string describe_devices();

}  // namespace hive
