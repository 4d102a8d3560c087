#pragma once
// The machinery of the test-backend-ops harness (test_backend_ops.cpp): an
// OpRun makes one case's tensors on one backend, from a seeded generator, so
// that the reference and the backend under test see the same inputs. Outputs
// are poisoned before the op and sit between guard zones; results() checks
// the guards and that every output was written, then returns every output's
// values as f32 for the comparison.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/buffer.hpp"

namespace hive::test {

inline constexpr size_t kGuardBytes = 256;
inline constexpr uint32_t kPoisonBits = 0x7fc0dead;  // a NaN no op produces
inline constexpr uint8_t kGuardByte = 0xa5;

class OpRun {
 public:
  OpRun(Backend& backend, uint64_t seed) : backend_(backend), rng_(seed) {}

  Backend& backend() { return backend_; }
  std::mt19937_64& rng() { return rng_; }

  // Random normal values (scale `scale`), stored as `dtype`; read-only.
  Tensor input(DType dtype, std::initializer_list<int64_t> shape, float scale = 1.0f);
  // A quantized KV pool (i8 or f8_e4m3, kernels/kv_quant.hpp): random
  // normal rows of shape's last dimension (head_dim), each quantized with
  // its scale, so the tensor's last dimension is head_dim + 4; read-only.
  Tensor kv_rows(DType dtype, std::initializer_list<int64_t> shape);
  // Random values in [low, high), f32: positive rows to normalise, scales.
  Tensor uniform(std::initializer_list<int64_t> shape, float low, float high);
  // Integer inputs (ids, positions, indices), i32.
  Tensor ints(const std::vector<int32_t>& values);
  Tensor ints(const std::vector<int64_t>& values);  // i64 (slot mappings)
  // An output: poisoned, between guards, compared after the op.
  Tensor output(DType dtype, std::initializer_list<int64_t> shape);
  // An op that updates in place: random start values, guarded, compared.
  Tensor inout(DType dtype, std::initializer_list<int64_t> shape, float scale = 1.0f);
  // Likewise with f32 start values in [low, high).
  Tensor inout_uniform(std::initializer_list<int64_t> shape, float low, float high);

  // After the op: the outputs' values in creation order, as f32. Fails (via
  // gtest) when a guard changed or, for output(), an element kept its poison.
  std::vector<float> results();
  // False once results() found a guard changed or an output unwritten.
  bool intact() const { return intact_; }

 private:
  struct Guarded {
    Buffer buffer;
    Tensor tensor;
    bool poisoned;
  };
  Tensor place(const std::vector<uint8_t>& bytes, DType dtype,
               std::initializer_list<int64_t> shape);
  Tensor guarded(const std::vector<uint8_t>& bytes, DType dtype,
                 std::initializer_list<int64_t> shape, bool poisoned);
  std::vector<uint8_t> random_bytes(DType dtype, size_t n, float scale);
  std::vector<uint8_t> uniform_bytes(size_t n, float low, float high);

  Backend& backend_;
  std::mt19937_64 rng_;
  std::vector<Buffer> inputs_;
  std::vector<Guarded> outputs_;
  bool intact_ = true;
};

// One row of the table: an op with its parameters, and the largest NMSE
// against the reference the backend under test may show.
struct OpCase {
  Op op;
  std::string params;  // printed: "f32 rows=7 dim=1000"
  double max_nmse;
  std::function<void(OpRun&)> run;
};

// The table (backend_op_cases.cpp).
std::vector<OpCase> backend_op_cases();

}  // namespace hive::test
