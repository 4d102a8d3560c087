#include "kernels/tensor.hpp"

#include <ostream>

#include "base/error.hpp"

namespace hive {

Tensor Tensor::view(void* data, DType dtype, const int64_t* shape, int ndim, Device device) {
  check(ndim >= 0 && ndim <= kMaxDims, "tensor rank must be 0..", kMaxDims, " (got ", ndim, ")");
  Tensor t;
  t.data = data;
  t.dtype = dtype;
  t.device = device;
  t.ndim = ndim;
  int64_t stride = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    check(shape[d] >= 0, "tensor dimension must be >= 0 (got ", shape[d], ")");
    t.shape[static_cast<size_t>(d)] = shape[d];
    t.strides[static_cast<size_t>(d)] = stride;
    stride *= shape[d];
  }
  const int64_t block = dtype_block_size(dtype);
  check(block == 1 || (ndim >= 1 && shape[ndim - 1] % block == 0), "a ", dtype_name(dtype),
        " tensor's rows must be whole blocks of ", block, " elements (got ", t.shape_string(), ")");
  return t;
}

Tensor Tensor::view(void* data, DType dtype, std::initializer_list<int64_t> shape, Device device) {
  return view(data, dtype, shape.begin(), static_cast<int>(shape.size()), device);
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int d = 0; d < ndim; ++d) n *= shape[static_cast<size_t>(d)];
  return n;
}

bool Tensor::is_contiguous() const {
  int64_t stride = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    if (shape[static_cast<size_t>(d)] != 1 && strides[static_cast<size_t>(d)] != stride)
      return false;
    stride *= shape[static_cast<size_t>(d)];
  }
  return true;
}

Tensor Tensor::reshape(std::initializer_list<int64_t> new_shape) const {
  check(is_contiguous(), "reshape needs a contiguous tensor (got ", shape_text(), ")");
  Tensor t = view(data, dtype, new_shape, device);
  check(t.numel() == numel(), "cannot reshape ", shape_text(), " to ", t.shape_text());
  return t;
}

Tensor Tensor::rows(int64_t begin, int64_t count) const {
  check(ndim >= 1 && begin >= 0 && count >= 0 && begin + count <= shape[0], "rows [", begin, ", ",
        begin + count, ") out of range for ", shape_text());
  const int64_t block = dtype_block_size(dtype);
  check(block == 1 || (begin * strides[0] % block == 0 && count * strides[0] % block == 0),
        "rows [", begin, ", ", begin + count, ") of ", shape_text(), " split its ", block,
        "-element blocks");
  Tensor t = *this;
  t.shape[0] = count;
  if (block_scales) {
    // Scale rows cover kFp8Block weight rows each: a slice starts on one.
    check(ndim == 2 && begin % kFp8Block == 0, "rows [", begin, ", ", begin + count, ") of ",
          shape_text(), " split its ", kFp8Block, "-row scale blocks");
    t.block_scales += begin / kFp8Block * ((shape[1] + kFp8Block - 1) / kFp8Block);
  }
  // Whole rows of a block dtype are whole blocks (view), so this counts
  // their bytes exactly.
  t.data =
      static_cast<char*>(data) + static_cast<ptrdiff_t>(dtype_bytes(dtype, begin * strides[0]));
  return t;
}

std::string Tensor::shape_string() const {
  std::string s = "[";
  for (int d = 0; d < ndim; ++d) {
    if (d) s += ", ";
    s += std::to_string(shape[static_cast<size_t>(d)]);
  }
  s += "] ";
  s += dtype_name(dtype);
  return s;
}

std::ostream& operator<<(std::ostream& out, const ShapeText& shape) {
  return out << shape.tensor.shape_string();
}

}  // namespace hive
