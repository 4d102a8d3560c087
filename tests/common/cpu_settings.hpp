#pragma once
// The CPU backend's process-wide settings a test may switch (threads, kernel
// path, matmul precision), put back as they were when the test ends: a
// fixture member, so an assertion that returns early restores them too.
#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/thread_pool.hpp"

namespace hive::test {

class KeptCpuSettings {
 public:
  KeptCpuSettings()
      : threads_(cpu::cpu_threads()),
        path_(cpu::cpu_kernel_path()),
        precision_(cpu::matmul_precision()) {}
  ~KeptCpuSettings() {
    cpu::set_cpu_threads(threads_);
    cpu::set_cpu_kernel_path(path_);
    cpu::set_matmul_precision(precision_);
  }
  KeptCpuSettings(const KeptCpuSettings&) = delete;
  KeptCpuSettings& operator=(const KeptCpuSettings&) = delete;

 private:
  int threads_;
  cpu::CpuPath path_;
  cpu::MatmulPrecision precision_;
};

}  // namespace hive::test
