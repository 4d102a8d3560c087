#pragma once
// The CUDA backend: device memory on one GPU and the ops written so far.
// Ops it does not have report supports(op) == false and throw if called;
// callers pick the CPU backend for a model this backend cannot run yet.
#include <string>

#include "kernels/backend.hpp"

namespace hive {

// The usable CUDA devices. No devices with an empty `error` is a machine
// without NVIDIA hardware (no device, or no driver and no /dev/nvidia*);
// `error` says what failed on a machine that has the hardware but cannot
// use it (a driver that does not match the runtime, ...).
struct CudaDevices {
  int count = 0;
  std::string error;
};
CudaDevices query_cuda_devices();
// query_cuda_devices().count.
int cuda_device_count();
// "CUDA runtime 13.0, cuBLAS 13.0.x, NCCL 2.x.y": versions of the libraries
// linked in, readable without a device.
std::string cuda_library_versions();

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device_index);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string_view name() const override { return "cuda"; }
  Device device() const override { return Device::cuda; }
  bool supports(Op op) const override;
  int64_t memory_bytes() const override { return memory_bytes_; }
  int64_t free_memory_bytes() const override;

  void* allocate(size_t bytes) override;
  void deallocate(void* ptr) override;
  void copy(const Tensor& dst, const Tensor& src) override;
  void synchronize() override;

  void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) override;
  void reshape_and_cache(const Tensor& k, const Tensor& v, const Tensor& slot_mapping,
                         const Tensor& k_blocks, const Tensor& v_blocks) override;
  void fill(const Tensor& x, float value) override;

  void embedding(const Tensor&, const Tensor&, const Tensor&) override { missing(Op::embedding); }
  void rope(const Tensor&, const Tensor&, const Tensor&) override { missing(Op::rope); }
  void matmul(const Tensor&, const Tensor&, const Tensor*, const Tensor&) override {
    missing(Op::matmul);
  }
  void add(const Tensor&, const Tensor&, const Tensor&) override { missing(Op::add); }
  void mul_rows(const Tensor&, const Tensor&) override { missing(Op::mul_rows); }
  void silu_mul(const Tensor&, const Tensor&, const Tensor&) override { missing(Op::silu_mul); }
  void sigmoid(const Tensor&) override { missing(Op::sigmoid); }
  void softmax(const Tensor&) override { missing(Op::softmax); }
  void topk(const Tensor&, int, const Tensor&, const Tensor&) override { missing(Op::topk); }
  void normalize_rows(const Tensor&) override { missing(Op::normalize_rows); }
  void attention(const AttentionParams&) override { missing(Op::attention); }
  void paged_attention(const PagedAttentionParams&) override { missing(Op::paged_attention); }
  void gather_rows(const Tensor&, const Tensor&, const Tensor&) override {
    missing(Op::gather_rows);
  }
  void scatter_add_rows(const Tensor&, const Tensor&, const Tensor&, const Tensor&) override {
    missing(Op::scatter_add_rows);
  }

 private:
  [[noreturn]] static void missing(Op op);
  int device_index_;
  int64_t memory_bytes_ = 0;
};

}  // namespace hive
