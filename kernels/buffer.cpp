#include "kernels/buffer.hpp"

#include "base/error.hpp"

namespace hive {

Buffer::Buffer(Backend& backend, DType dtype, std::initializer_list<int64_t> shape) {
  Tensor t = Tensor::view(nullptr, dtype, shape, backend.device());
  *this = Buffer(backend, t.nbytes());
  t.data = data_;
  tensor_ = t;
}

Tensor Buffer::view(DType dtype, std::initializer_list<int64_t> shape) const {
  Tensor t = Tensor::view(data_, dtype, shape, backend_ ? backend_->device() : Device::cpu);
  check(t.nbytes() <= bytes_, "view ", t.shape_text(), " needs ", t.nbytes(),
        " bytes but the buffer holds ", bytes_);
  return t;
}

}  // namespace hive
