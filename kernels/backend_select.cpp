#include "kernels/backend_select.hpp"

#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#ifdef HIVE_HAVE_CUDA
#include "kernels/cuda/cuda_backend.hpp"
#endif

namespace hive {

namespace {

#ifdef HIVE_HAVE_CUDA
std::string missing_ops(const Backend& backend, std::span<const Op> needed) {
  std::string missing;
  for (Op op : needed)
    if (!backend.supports(op)) missing += str_cat(missing.empty() ? "" : ", ", op_name(op));
  return missing;
}
#endif

}  // namespace

DeviceChoice parse_device_choice(std::string_view name, std::string_view what) {
  if (name == "auto") return DeviceChoice::automatic;
  if (name == "cpu") return DeviceChoice::cpu;
  check(name == "cuda", what, ": expected auto, cpu or cuda (got '", name, "')");
  return DeviceChoice::cuda;
}

std::string_view device_choice_name(DeviceChoice device) {
  switch (device) {
    case DeviceChoice::cpu:
      return "cpu";
    case DeviceChoice::cuda:
      return "cuda";
    case DeviceChoice::automatic:
      break;
  }
  return "auto";
}

BackendChoice select_backend(DeviceChoice device, std::span<const Op> needed) {
  BackendChoice choice;
  if (device == DeviceChoice::cpu) {
    choice.backend = std::make_unique<CpuBackend>();
    return choice;
  }
#ifdef HIVE_HAVE_CUDA
  if (cuda_device_count() == 0) {
    check(device != DeviceChoice::cuda, "device cuda: no CUDA device found");
    choice.note = "hive: no CUDA device found; using the CPU backend";
  } else {
    auto cuda = std::make_unique<CudaBackend>(0);
    const std::string missing = missing_ops(*cuda, needed);
    if (missing.empty()) {
      choice.backend = std::move(cuda);
      return choice;
    }
    check(device != DeviceChoice::cuda, "device cuda: the CUDA backend does not implement ", missing, " yet");
    choice.note = str_cat("hive: the CUDA backend does not implement ", missing,
                          " yet; using the CPU backend");
  }
#else
  (void)needed;
  check(device != DeviceChoice::cuda, "device cuda: this build of hive has no CUDA backend");
  choice.note = "hive: built without CUDA; using the CPU backend";
#endif
  choice.backend = std::make_unique<CpuBackend>();
  return choice;
}

std::string describe_devices() {
#ifdef HIVE_HAVE_CUDA
  return str_cat("cpu; ", cuda_library_versions(), "; ", cuda_device_count(), " CUDA device(s)");
#else
  return "cpu; built without CUDA";
#endif
}

}  // namespace hive
