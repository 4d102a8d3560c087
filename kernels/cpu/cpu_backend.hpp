#pragma once
// The CPU backend: host memory and the reference ops of ops.hpp.
#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kernels/backend.hpp"

namespace hive {

// Physical memory of this machine.
int64_t host_memory_bytes();
// Memory the kernel could hand out now without swapping: /proc/meminfo's
// MemAvailable (free pages plus reclaimable cache), else the free pages.
int64_t host_available_bytes();

class CpuBackend : public Backend {
 public:
  CpuBackend() = default;
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;
  ~CpuBackend() override;

  std::string_view name() const override { return "cpu"; }
  Device device() const override { return Device::cpu; }
  bool supports(Op op) const override { return op != Op::count; }
  bool takes_quantized_weights() const override { return true; }
  bool takes_kv_cache_dtype(DType dtype) const override;  // all four: f32, bf16, i8, f8_e4m3
  int64_t memory_bytes() const override { return host_memory_bytes(); }
  int64_t free_memory_bytes() const override { return host_available_bytes(); }

  void* allocate(size_t bytes) override;
  void deallocate(void* ptr) override;
  void copy(const Tensor& dst, const Tensor& src) override;
  void synchronize() override {}

  void embedding(const Tensor& table, const Tensor& ids, const Tensor& out) override;
  void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) override;
  void rope(const Tensor& x, const Tensor& positions, const Tensor& inv_freq) override;
  void matmul(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& out) override;
  void matmul_group(std::span<const MatmulProblem> problems) override;
  void add(const Tensor& a, const Tensor& b, const Tensor& out) override;
  void mul_rows(const Tensor& x, const Tensor& scale) override;
  void silu_mul(const Tensor& gate, const Tensor& up, const Tensor& out) override;
  void sigmoid(const Tensor& x) override;
  void softmax(const Tensor& x) override;
  void topk(const Tensor& x, int k, const Tensor& values, const Tensor& indices) override;
  void normalize_rows(const Tensor& x) override;
  void attention(const AttentionParams& params) override;
  void paged_attention(const PagedAttentionParams& params) override;
  void gather_rows(const Tensor& src, const Tensor& index, const Tensor& out) override;
  void scatter_add_rows(const Tensor& src, const Tensor& index, const Tensor& weight,
                        const Tensor& out) override;
  void reshape_and_cache(const Tensor& k, const Tensor& v, const Tensor& slot_mapping,
                         const Tensor& k_blocks, const Tensor& v_blocks) override;
  void fill(const Tensor& x, float value) override;

  // Bytes of freed blocks kept for reuse (see allocate).
  size_t cached_bytes() const;

 private:
  // Freed blocks from kMinCachedBytes to kMaxCachedBlockBytes are kept by
  // size, up to kMaxCachedBytes in all, and handed out again for the same
  // size: a step allocates the same activation buffers in every layer and
  // every step, and memory back from the OS comes as fresh pages that fault
  // and are zeroed on first touch. Off under AddressSanitizer, which must
  // see every free.
  mutable std::mutex cache_mutex_;
  std::unordered_map<void*, size_t> block_sizes_;            // live and cached blocks
  std::unordered_map<size_t, std::vector<void*>> free_blocks_;  // by size
  size_t cached_bytes_ = 0;
};

}  // namespace hive
