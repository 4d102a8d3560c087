#pragma once
// A Tensor is a non-owning view: pointer, dtype, device, shape and strides
// (in elements, row-major). Memory is owned by a Buffer (see buffer.hpp) or
// by a mapped checkpoint file; a view never frees anything.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>

#include "kernels/dtype.hpp"

namespace hive {

enum class Device : uint8_t { cpu, cuda };

inline constexpr int kMaxDims = 4;

struct Tensor;

// A tensor's shape for an error message, formatted only when streamed: the
// ops pass it to a check on every call, and building the string each time
// cost about 3 % of a decode step.
struct ShapeText {
  const Tensor& tensor;
};
std::ostream& operator<<(std::ostream& out, const ShapeText& shape);

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::f32;
  Device device = Device::cpu;
  int ndim = 0;
  std::array<int64_t, kMaxDims> shape{};
  std::array<int64_t, kMaxDims> strides{};
  // An f8_e4m3 weight's block scales (an FP8 checkpoint's weight_scale_inv),
  // f32, [ceil(rows / 128), ceil(cols / 128)] row-major: element (r, c) is
  // its stored value times block_scales[r / 128 * ceil(cols / 128) + c / 128]
  // (kFp8Block). Null for every other tensor. Set by the weight store,
  // which owns both; a view carries it so that the weight reaches the
  // matmul as one argument (docs/design/loader.md, "Safetensors").
  const float* block_scales = nullptr;

  // A contiguous row-major view of `data`. A block dtype's last dimension
  // must be a whole number of blocks (strides still count elements).
  static Tensor view(void* data, DType dtype, std::initializer_list<int64_t> shape,
                     Device device = Device::cpu);
  static Tensor view(void* data, DType dtype, const int64_t* shape, int ndim,
                     Device device = Device::cpu);

  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(dtype_bytes(dtype, numel())); }
  int64_t size(int dim) const { return shape[static_cast<size_t>(dim < 0 ? dim + ndim : dim)]; }
  bool is_contiguous() const;

  // Same data, new shape with the same element count; needs a contiguous view.
  Tensor reshape(std::initializer_list<int64_t> new_shape) const;
  // Rows [begin, begin + count) along dimension 0.
  Tensor rows(int64_t begin, int64_t count) const;

  template <class T>
  T* as() const {
    return static_cast<T*>(data);
  }

  std::string shape_string() const;  // "[4, 8] bf16"
  ShapeText shape_text() const { return ShapeText{*this}; }
};

}  // namespace hive
