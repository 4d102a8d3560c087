#pragma once
// Buffer owns one allocation made by a Backend and hands out Tensor views of it.
#include <cstddef>
#include <initializer_list>
#include <span>
#include <utility>
#include <vector>

#include "kernels/backend.hpp"

namespace hive {

class Buffer {
 public:
  Buffer() = default;
  Buffer(Backend& backend, size_t bytes)
      : backend_(&backend), data_(bytes ? backend.allocate(bytes) : nullptr), bytes_(bytes) {}
  // A buffer sized for one tensor, returned as that tensor's owner.
  Buffer(Backend& backend, DType dtype, std::initializer_list<int64_t> shape);
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      release();
      backend_ = std::exchange(other.backend_, nullptr);
      data_ = std::exchange(other.data_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
      tensor_ = other.tensor_;
    }
    return *this;
  }
  ~Buffer() { release(); }

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  // The tensor this buffer was made for (constructor with a shape).
  const Tensor& tensor() const { return tensor_; }
  // A view of the start of the buffer with another shape.
  Tensor view(DType dtype, std::initializer_list<int64_t> shape) const;

 private:
  void release() {
    if (backend_ && data_) backend_->deallocate(data_);
    data_ = nullptr;
  }

  Backend* backend_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Tensor tensor_;
};

// A backend buffer holding a copy of host values, as a 1-d tensor.
template <class T>
Buffer upload(Backend& backend, std::span<const T> host, DType dtype) {
  const auto n = static_cast<int64_t>(host.size());
  Buffer buffer(backend, dtype, {n});
  backend.copy(buffer.tensor(), Tensor::view(const_cast<T*>(host.data()), dtype, {n}));
  return buffer;
}

// The values of a backend tensor, copied to the host.
template <class T>
std::vector<T> download(Backend& backend, const Tensor& tensor) {
  std::vector<T> host(static_cast<size_t>(tensor.numel()));
  Tensor view = tensor;
  view.data = host.data();
  view.device = Device::cpu;
  backend.copy(view, tensor);
  return host;
}

}  // namespace hive
