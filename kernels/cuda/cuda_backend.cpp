#include "kernels/cuda/cuda_backend.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <filesystem>

#include "base/error.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cuda/fill.cuh"
#include "kernels/cuda/reshape_and_cache.cuh"
#include "kernels/cuda/rms_norm.cuh"

namespace hive {

namespace {

void check_cuda(cudaError_t status, const char* what) {
  check(status == cudaSuccess, "cuda: ", what, ": ", cudaGetErrorString(status));
}

cudaMemcpyKind copy_kind(Device dst, Device src) {
  if (dst == Device::cuda)
    return src == Device::cuda ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
  return src == Device::cuda ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost;
}

}  // namespace

CudaDevices query_cuda_devices() {
  CudaDevices devices;
  const cudaError_t status = cudaGetDeviceCount(&devices.count);
  if (status == cudaSuccess) return devices;
  cudaGetLastError();  // clear the sticky error
  devices.count = 0;
  // Without NVIDIA device files there is no GPU to use, whatever the runtime
  // says (no driver, a stub driver): that is a CPU machine, not a failure.
  const bool hardware =
      std::filesystem::exists("/dev/nvidiactl") || std::filesystem::exists("/dev/nvidia0");
  if (status != cudaErrorNoDevice && hardware)
    devices.error = str_cat("cudaGetDeviceCount: ", cudaGetErrorString(status),
                            hardware ? " (NVIDIA device files are present)" : "");
  return devices;
}

int cuda_device_count() {
  return query_cuda_devices().count;
}

std::string cuda_library_versions() {
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  int cublas_major = 0, cublas_minor = 0, cublas_patch = 0;
  cublasGetProperty(MAJOR_VERSION, &cublas_major);
  cublasGetProperty(MINOR_VERSION, &cublas_minor);
  cublasGetProperty(PATCH_LEVEL, &cublas_patch);
  int nccl = 0;
  ncclGetVersion(&nccl);
  return str_cat("CUDA runtime ", runtime / 1000, ".", runtime % 1000 / 10, ", cuBLAS ",
                 cublas_major, ".", cublas_minor, ".", cublas_patch, ", NCCL ", nccl / 10000, ".",
                 nccl % 10000 / 100, ".", nccl % 100);
}

CudaBackend::CudaBackend(int device_index) : device_index_(device_index) {
  check_cuda(cudaSetDevice(device_index), "cudaSetDevice");
  size_t free = 0, total = 0;
  check_cuda(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  memory_bytes_ = static_cast<int64_t>(total);
}

CudaBackend::~CudaBackend() = default;

int64_t CudaBackend::free_memory_bytes() const {
  check_cuda(cudaSetDevice(device_index_), "cudaSetDevice");
  size_t free = 0, total = 0;
  check_cuda(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return static_cast<int64_t>(free);
}

bool CudaBackend::supports(Op op) const {
  return op == Op::rms_norm || op == Op::reshape_and_cache || op == Op::fill;
}

void CudaBackend::missing(Op op) {
  fail("the cuda backend does not implement ", op_name(op), " yet");
}

void* CudaBackend::allocate(size_t bytes) {
  void* ptr = nullptr;
  check_cuda(cudaMalloc(&ptr, bytes), "cudaMalloc");
  return ptr;
}

void CudaBackend::deallocate(void* ptr) {
  cudaFree(ptr);
}

void CudaBackend::copy(const Tensor& dst, const Tensor& src) {
  check(dst.is_contiguous() && src.is_contiguous() && dst.nbytes() == src.nbytes() &&
            dst.dtype == src.dtype,
        "copy: ", src.shape_text(), " into ", dst.shape_text());
  check_cuda(cudaMemcpy(dst.data, src.data, src.nbytes(), copy_kind(dst.device, src.device)),
             "cudaMemcpy");
}

void CudaBackend::synchronize() {
  check_cuda(cudaDeviceSynchronize(), "synchronize");
}

void CudaBackend::rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) {
  cpu::expect(x, DType::f32, 2, "rms_norm x");
  cpu::expect(out, DType::f32, 2, "rms_norm out");
  cpu::expect_float(weight, 1, "rms_norm weight");
  check(x.device == Device::cuda && weight.device == Device::cuda && out.device == Device::cuda,
        "cuda rms_norm: tensors must be on the device");
  check(out.shape[0] == x.shape[0] && out.shape[1] == x.shape[1] && weight.shape[0] == x.shape[1],
        "rms_norm: shapes ", x.shape_text(), ", ", weight.shape_text(), ", ", out.shape_text(),
        " disagree");
  const cuda::WeightType weight_type = weight.dtype == DType::bf16  ? cuda::WeightType::bf16
                                       : weight.dtype == DType::f16 ? cuda::WeightType::f16
                                                                    : cuda::WeightType::f32;
  const cuda::RmsNormParams params{x.as<float>(), weight.data, weight_type, out.as<float>(),
                                   x.shape[0],    x.shape[1],  eps};
  check_cuda(cuda::launch_rms_norm(params, nullptr), "rms_norm");
}

void CudaBackend::reshape_and_cache(const Tensor& k, const Tensor& v, const Tensor& slot_mapping,
                                    const Tensor& k_blocks, const Tensor& v_blocks) {
  cpu::check_kv_write(k, v, slot_mapping, k_blocks, v_blocks);
  check(takes_kv_cache_dtype(k_blocks.dtype), "cuda reshape_and_cache: a ",
        dtype_name(k_blocks.dtype),
        " KV cache is not supported on CUDA (int8/fp8 KV is CPU only); use --kv-cache-dtype bf16 "
        "or f32");
  check(k.device == Device::cuda && v.device == Device::cuda &&
            slot_mapping.device == Device::cuda && k_blocks.device == Device::cuda &&
            v_blocks.device == Device::cuda,
        "cuda reshape_and_cache: tensors must be on the device");
  const cuda::ReshapeAndCacheParams params{
      k.as<float>(),
      v.as<float>(),
      slot_mapping.as<int64_t>(),
      k_blocks.data,
      v_blocks.data,
      k_blocks.dtype == DType::bf16 ? cuda::CacheType::bf16 : cuda::CacheType::f32,
      k.shape[0],
      k.shape[1] * k.shape[2]};
  check_cuda(cuda::launch_reshape_and_cache(params, nullptr), "reshape_and_cache");
}

void CudaBackend::fill(const Tensor& x, float value) {
  check(x.dtype == DType::f32 && x.is_contiguous() && x.device == Device::cuda,
        "cuda fill: expected a contiguous f32 tensor on the device (got ", x.shape_text(), ")");
  check_cuda(cuda::launch_fill(x.as<float>(), x.numel(), value, nullptr), "fill");
}

}  // namespace hive
