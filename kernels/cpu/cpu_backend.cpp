#include "kernels/cpu/cpu_backend.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>

#include "base/error.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/kv_quant.hpp"

namespace hive {

namespace {
constexpr size_t kAlignment = 64;  // a cache line; enough for any SIMD load
// The block cache (cpu_backend.hpp): below 256 KiB malloc reuses memory
// itself; above 64 MiB are the KV pool and weights, allocated once.
constexpr size_t kMinCachedBytes = size_t{256} << 10;
constexpr size_t kMaxCachedBlockBytes = size_t{64} << 20;
constexpr size_t kMaxCachedBytes = size_t{512} << 20;
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCacheBlocks = false;
#else
constexpr bool kCacheBlocks = true;
#endif
}  // namespace

int64_t host_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGE_SIZE);
  check(pages > 0 && page_size > 0, "cannot read this machine's memory size");
  return int64_t{pages} * page_size;
}

int64_t host_available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  int64_t value = 0;
  while (meminfo >> key >> value >> unit)
    if (key == "MemAvailable:" && unit == "kB") return value * 1024;
  const long pages = ::sysconf(_SC_AVPHYS_PAGES), page_size = ::sysconf(_SC_PAGE_SIZE);
  check(pages > 0 && page_size > 0, "cannot read this machine's free memory");
  return int64_t{pages} * page_size;
}

CpuBackend::~CpuBackend() {
  for (auto& [size, blocks] : free_blocks_)
    for (void* block : blocks) std::free(block);
}

void* CpuBackend::allocate(size_t bytes) {
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  const bool cacheable = kCacheBlocks && rounded >= kMinCachedBytes && rounded <= kMaxCachedBlockBytes;
  if (cacheable) {
    const std::lock_guard lock(cache_mutex_);
    const auto it = free_blocks_.find(rounded);
    if (it != free_blocks_.end() && !it->second.empty()) {
      void* block = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= rounded;
      return block;
    }
  }
  void* ptr = std::aligned_alloc(kAlignment, rounded);
  if (!ptr) throw std::bad_alloc();
  if (cacheable) {
    const std::lock_guard lock(cache_mutex_);
    block_sizes_.emplace(ptr, rounded);
  }
  return ptr;
}

void CpuBackend::deallocate(void* ptr) {
  if (kCacheBlocks && ptr != nullptr) {
    const std::lock_guard lock(cache_mutex_);
    const auto it = block_sizes_.find(ptr);
    if (it != block_sizes_.end()) {
      if (cached_bytes_ + it->second <= kMaxCachedBytes) {
        free_blocks_[it->second].push_back(ptr);
        cached_bytes_ += it->second;
        return;
      }
      block_sizes_.erase(it);
    }
  }
  std::free(ptr);
}

size_t CpuBackend::cached_bytes() const {
  const std::lock_guard lock(cache_mutex_);
  return cached_bytes_;
}

void CpuBackend::copy(const Tensor& dst, const Tensor& src) {
  check(dst.device == Device::cpu && src.device == Device::cpu, "cpu copy: both tensors must be ",
        "on the host");
  check(dst.is_contiguous() && src.is_contiguous() && dst.nbytes() == src.nbytes() &&
            dst.dtype == src.dtype,
        "copy: ", src.shape_text(), " into ", dst.shape_text());
  if (src.nbytes()) std::memmove(dst.data, src.data, src.nbytes());
}

void CpuBackend::embedding(const Tensor& table, const Tensor& ids, const Tensor& out) {
  cpu::embedding(table, ids, out);
}
void CpuBackend::rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) {
  cpu::rms_norm(x, weight, eps, out);
}
void CpuBackend::rope(const Tensor& x, const Tensor& positions, const Tensor& inv_freq) {
  cpu::rope(x, positions, inv_freq);
}
void CpuBackend::matmul(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& out) {
  cpu::matmul(x, w, bias, out);
}
void CpuBackend::matmul_group(std::span<const MatmulProblem> problems) {
  cpu::matmul_group(problems);
}
void CpuBackend::add(const Tensor& a, const Tensor& b, const Tensor& out) {
  cpu::add(a, b, out);
}
void CpuBackend::mul_rows(const Tensor& x, const Tensor& scale) {
  cpu::mul_rows(x, scale);
}
void CpuBackend::silu_mul(const Tensor& gate, const Tensor& up, const Tensor& out) {
  cpu::silu_mul(gate, up, out);
}
void CpuBackend::sigmoid(const Tensor& x) {
  cpu::sigmoid(x);
}
void CpuBackend::softmax(const Tensor& x) {
  cpu::softmax(x);
}
void CpuBackend::topk(const Tensor& x, int k, const Tensor& values, const Tensor& indices) {
  cpu::topk(x, k, values, indices);
}
void CpuBackend::normalize_rows(const Tensor& x) {
  cpu::normalize_rows(x);
}
void CpuBackend::attention(const AttentionParams& params) {
  cpu::attention(params);
}
bool CpuBackend::takes_kv_cache_dtype(DType dtype) const {
  return is_kv_cache_dtype(dtype);
}

void CpuBackend::paged_attention(const PagedAttentionParams& params) {
  cpu::paged_attention(params);
}
void CpuBackend::gather_rows(const Tensor& src, const Tensor& index, const Tensor& out) {
  cpu::gather_rows(src, index, out);
}
void CpuBackend::scatter_add_rows(const Tensor& src, const Tensor& index, const Tensor& weight,
                                  const Tensor& out) {
  cpu::scatter_add_rows(src, index, weight, out);
}
void CpuBackend::reshape_and_cache(const Tensor& k, const Tensor& v, const Tensor& slot_mapping,
                                   const Tensor& k_blocks, const Tensor& v_blocks) {
  cpu::reshape_and_cache(k, v, slot_mapping, k_blocks, v_blocks);
}
void CpuBackend::fill(const Tensor& x, float value) {
  cpu::fill(x, value);
}

}  // namespace hive
