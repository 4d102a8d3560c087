#include "tests/kernels/op_harness.hpp"

#include <algorithm>

#include "kernels/kv_quant.hpp"
#include "tests/common/random.hpp"

namespace hive::test {

namespace {

std::vector<uint8_t> floats_as(DType dtype, const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * dtype_size(dtype));
  if (dtype == DType::f32) {
    std::memcpy(bytes.data(), values.data(), bytes.size());
  } else {
    const std::vector<uint16_t> bits = to_half_bits(values, dtype);
    std::memcpy(bytes.data(), bits.data(), bytes.size());
  }
  return bytes;
}

float element(const uint8_t* at, DType dtype) {
  switch (dtype) {
    case DType::f32: {
      float v;
      std::memcpy(&v, at, 4);
      return v;
    }
    case DType::bf16:
    case DType::f16: {
      uint16_t v;
      std::memcpy(&v, at, 2);
      return dtype == DType::bf16 ? bf16_to_f32(v) : f16_to_f32(v);
    }
    case DType::i32: {
      int32_t v;
      std::memcpy(&v, at, 4);
      return static_cast<float>(v);
    }
    case DType::i64: {
      int64_t v;
      std::memcpy(&v, at, 8);
      return static_cast<float>(v);
    }
    default:  // block types have no element to read alone
      return 0;
  }
}

size_t count(std::initializer_list<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return static_cast<size_t>(n);
}

}  // namespace

std::vector<uint8_t> OpRun::random_bytes(DType dtype, size_t n, float scale) {
  return floats_as(dtype, random_floats(rng_, n, scale));
}

Tensor OpRun::place(const std::vector<uint8_t>& bytes, DType dtype,
                    std::initializer_list<int64_t> shape) {
  Buffer& b = inputs_.emplace_back(backend_, bytes.size());
  Tensor t = Tensor::view(b.data(), dtype, shape, backend_.device());
  Tensor host = Tensor::view(const_cast<uint8_t*>(bytes.data()), dtype, shape);
  backend_.copy(t, host);
  return t;
}

Tensor OpRun::input(DType dtype, std::initializer_list<int64_t> shape, float scale) {
  return place(random_bytes(dtype, count(shape), scale), dtype, shape);
}

std::vector<uint8_t> OpRun::uniform_bytes(size_t n, float low, float high) {
  std::uniform_real_distribution<float> dist(low, high);
  std::vector<float> values(n);
  for (float& v : values) v = dist(rng_);
  return floats_as(DType::f32, values);
}

Tensor OpRun::kv_rows(DType dtype, std::initializer_list<int64_t> shape) {
  std::vector<int64_t> dims(shape);
  const int64_t head_dim = dims.back(), row = kv_row_elems(dtype, head_dim);
  const std::vector<float> values = random_floats(rng_, count(shape));
  const auto rows = static_cast<int64_t>(values.size()) / head_dim;
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * row));
  for (int64_t r = 0; r < rows; ++r)
    quantize_kv_row(values.data() + r * head_dim, head_dim, dtype, bytes.data() + r * row);
  dims.back() = row;
  Buffer& b = inputs_.emplace_back(backend_, bytes.size());
  const Tensor t =
      Tensor::view(b.data(), dtype, dims.data(), static_cast<int>(dims.size()), backend_.device());
  backend_.copy(t, Tensor::view(bytes.data(), dtype, dims.data(), static_cast<int>(dims.size())));
  return t;
}

Tensor OpRun::uniform(std::initializer_list<int64_t> shape, float low, float high) {
  return place(uniform_bytes(count(shape), low, high), DType::f32, shape);
}

Tensor OpRun::ints(const std::vector<int32_t>& values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return place(bytes, DType::i32, {static_cast<int64_t>(values.size())});
}

Tensor OpRun::ints(const std::vector<int64_t>& values) {
  std::vector<uint8_t> bytes(values.size() * 8);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return place(bytes, DType::i64, {static_cast<int64_t>(values.size())});
}

Tensor OpRun::guarded(const std::vector<uint8_t>& bytes, DType dtype,
                      std::initializer_list<int64_t> shape, bool poisoned) {
  // guard | tensor | guard, written in one copy from the host.
  // Copies move i64 words: the tail guard takes the rounding.
  const size_t padded = (bytes.size() + 7) / 8 * 8;
  std::vector<uint8_t> image(padded + 2 * kGuardBytes, kGuardByte);
  std::copy(bytes.begin(), bytes.end(), image.begin() + kGuardBytes);
  Buffer b(backend_, image.size());
  const auto size = static_cast<int64_t>(image.size());
  backend_.copy(Tensor::view(b.data(), DType::i64, {size / 8}, backend_.device()),
                Tensor::view(image.data(), DType::i64, {size / 8}));
  Tensor t =
      Tensor::view(static_cast<uint8_t*>(b.data()) + kGuardBytes, dtype, shape, backend_.device());
  outputs_.push_back({std::move(b), t, poisoned});
  return t;
}

Tensor OpRun::output(DType dtype, std::initializer_list<int64_t> shape) {
  const size_t n = count(shape), size = dtype_size(dtype);
  std::vector<uint8_t> bytes(n * size);
  for (size_t i = 0; i < n; ++i) std::memcpy(&bytes[i * size], &kPoisonBits, size);
  return guarded(bytes, dtype, shape, true);
}

Tensor OpRun::inout(DType dtype, std::initializer_list<int64_t> shape, float scale) {
  return guarded(random_bytes(dtype, count(shape), scale), dtype, shape, false);
}

Tensor OpRun::inout_uniform(std::initializer_list<int64_t> shape, float low, float high) {
  return guarded(uniform_bytes(count(shape), low, high), DType::f32, shape, false);
}

std::vector<float> OpRun::results() {
  backend_.synchronize();
  std::vector<float> values;
  for (size_t o = 0; o < outputs_.size(); ++o) {
    const Guarded& g = outputs_[o];
    std::vector<uint8_t> image(g.buffer.bytes());
    const auto size = static_cast<int64_t>(image.size());
    backend_.copy(Tensor::view(image.data(), DType::i64, {size / 8}),
                  Tensor::view(g.buffer.data(), DType::i64, {size / 8}, backend_.device()));
    const size_t size_of = dtype_size(g.tensor.dtype), data_end = kGuardBytes + g.tensor.nbytes();
    for (size_t i = 0; i < image.size(); ++i) {
      if ((i < kGuardBytes || i >= data_end) && image[i] != kGuardByte) {
        ADD_FAILURE() << "output " << o << ": guard byte " << i << " was overwritten";
        intact_ = false;
        break;
      }
    }
    for (int64_t i = 0; i < g.tensor.numel(); ++i) {
      const uint8_t* at = image.data() + kGuardBytes + static_cast<size_t>(i) * size_of;
      if (g.poisoned && std::memcmp(at, &kPoisonBits, size_of) == 0) {
        ADD_FAILURE() << "output " << o << " element " << i << " was not written";
        intact_ = false;
        return values;
      }
      values.push_back(element(at, g.tensor.dtype));
    }
  }
  return values;
}

}  // namespace hive::test
