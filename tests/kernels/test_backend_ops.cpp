// Every op of every non-CPU backend against the CPU reference, as llama.cpp's
// test-backend-ops does: random inputs (seed printed), outputs poisoned
// before the run, compared by normalised MSE. An op a backend does not
// support is reported and skipped; without a device the whole suite skips.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "kernels/buffer.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/step_attention_plan.hpp"
#ifdef HIVE_HAVE_CUDA
#include "kernels/cuda/cuda_backend.hpp"
#endif
#include "tests/common/random.hpp"

namespace hive {
namespace {

std::unique_ptr<Backend> device_backend() {
#ifdef HIVE_HAVE_CUDA
  if (cuda_device_count() > 0) return std::make_unique<CudaBackend>(0);
#endif
  return nullptr;
}

// Uploads host data to the backend.
Buffer upload(Backend& backend, const Tensor& host) {
  Buffer b(backend, host.nbytes());
  Tensor dst = host;
  dst.data = b.data();
  dst.device = backend.device();
  backend.copy(dst, host);
  return b;
}

// A KV budget's memory fraction is a share of this: the device's memory.
TEST(BackendOps, MemoryIsTheDevicesOwn) {
  auto backend = device_backend();
  ASSERT_TRUE(backend);
  EXPECT_GT(backend->memory_bytes(), int64_t{1} << 30) << backend->name();
  EXPECT_LT(backend->memory_bytes(), int64_t{1} << 42) << backend->name();
}

TEST(BackendOps, RmsNorm) {
  auto backend = device_backend();
  ASSERT_TRUE(backend);
  if (!backend->supports(Op::rms_norm)) GTEST_SKIP() << backend->name() << " lacks rms_norm";
  std::mt19937_64 rng(test::test_seed());
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  CpuBackend cpu;
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    for (auto [rows, dim] : {std::pair{1, 64}, {7, 1000}, {33, 4096}}) {
      SCOPED_TRACE(testing::Message() << dtype_name(dtype) << " rows=" << rows << " dim=" << dim);
      auto x = test::random_floats(rng, static_cast<size_t>(rows * dim), 2.0f);
      auto wf = test::random_floats(rng, static_cast<size_t>(dim));
      auto wh = test::to_half_bits(wf, dtype);
      const Tensor x_host = Tensor::view(x.data(), DType::f32, {rows, dim});
      const Tensor w_host = Tensor::view(
          dtype == DType::f32 ? static_cast<void*>(wf.data()) : wh.data(), dtype, {dim});
      std::vector<float> expected(x.size()), got(x.size(), NAN);
      cpu.rms_norm(x_host, w_host, 1e-6f, Tensor::view(expected.data(), DType::f32, {rows, dim}));

      Buffer x_dev = upload(*backend, x_host), w_dev = upload(*backend, w_host);
      Buffer out_dev =
          upload(*backend, Tensor::view(got.data(), DType::f32, {rows, dim}));  // poison
      Tensor x_t = x_host, w_t = w_host, out_t = x_host;
      x_t.data = x_dev.data(), w_t.data = w_dev.data(), out_t.data = out_dev.data();
      x_t.device = w_t.device = out_t.device = backend->device();
      backend->rms_norm(x_t, w_t, 1e-6f, out_t);
      backend->synchronize();
      backend->copy(Tensor::view(got.data(), DType::f32, {rows, dim}), out_t);
      for (float v : got) ASSERT_TRUE(std::isfinite(v));
      EXPECT_LT(test::nmse(got.data(), expected.data(), got.size()), 1e-10);
    }
  }
}

// One step of three sequences (a decode, a prefill chunk, a whole prompt)
// with its plan built on the device, against the CPU's batched op.
TEST(BackendOps, PagedAttention) {
  auto backend = device_backend();
  ASSERT_TRUE(backend);
  if (!backend->supports(Op::paged_attention))
    GTEST_SKIP() << backend->name() << " lacks paged_attention";
  std::mt19937_64 rng(test::test_seed());
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  CpuBackend cpu;
  for (auto [heads, kv_heads, head_dim, block_size, window] :
       {std::tuple{8, 4, 64, 16, 0}, {8, 2, 128, 1, 0}, {4, 4, 64, 16, 20}}) {
    SCOPED_TRACE(testing::Message()
                 << "heads=" << heads << " kv_heads=" << kv_heads << " head_dim=" << head_dim
                 << " block_size=" << block_size << " window=" << window);
    const int64_t contexts[] = {77, 40, 25}, queries[] = {1, 9, 25};
    std::vector<std::vector<int32_t>> tables;
    int32_t next_block = 1;
    std::vector<PlannedSequence> sequences;
    for (int s = 0; s < 3; ++s) {
      std::vector<int32_t>& table = tables.emplace_back();
      for (int64_t b = 0; b < (contexts[s] + block_size - 1) / block_size; ++b)
        table.push_back(next_block++);
    }
    for (int s = 0; s < 3; ++s) sequences.push_back({queries[s], contexts[s], tables[s]});
    const int64_t num_blocks = next_block, tokens = 1 + 9 + 25;
    auto q = test::random_floats(rng, static_cast<size_t>(tokens * heads * head_dim));
    const auto pool_elems = static_cast<size_t>(num_blocks * block_size * kv_heads * head_dim);
    auto k = test::random_floats(rng, pool_elems), v = test::random_floats(rng, pool_elems);
    const Tensor q_host = Tensor::view(q.data(), DType::f32, {tokens, heads, head_dim});
    const Tensor k_host =
        Tensor::view(k.data(), DType::f32, {num_blocks, block_size, kv_heads, head_dim});
    const Tensor v_host = Tensor::view(v.data(), DType::f32, k_host.shape.data(), 4);
    std::vector<float> expected(q.size()), got(q.size(), NAN);
    const StepAttentionPlan cpu_plan(cpu, sequences, num_blocks, block_size);
    PagedAttentionParams p{
        q_host,          k_host,
        v_host,          Tensor::view(expected.data(), DType::f32, q_host.shape.data(), 3),
        cpu_plan.plan(), 1.0f / std::sqrt(static_cast<float>(head_dim)),
        window};
    cpu.paged_attention(p);

    const StepAttentionPlan device_plan(*backend, sequences, num_blocks, block_size);
    Buffer q_dev = upload(*backend, q_host), k_dev = upload(*backend, k_host),
           v_dev = upload(*backend, v_host);
    const Tensor got_host = Tensor::view(got.data(), DType::f32, q_host.shape.data(), 3);
    Buffer out_dev = upload(*backend, got_host);  // poison
    const auto on_device = [&](Tensor t, const Buffer& b) {
      t.data = b.data();
      t.device = backend->device();
      return t;
    };
    p = {on_device(q_host, q_dev),
         on_device(k_host, k_dev),
         on_device(v_host, v_dev),
         on_device(got_host, out_dev),
         device_plan.plan(),
         p.scale,
         window};
    backend->paged_attention(p);
    backend->synchronize();
    backend->copy(got_host, p.out);
    for (float x : got) ASSERT_TRUE(std::isfinite(x));
    EXPECT_LT(test::nmse(got.data(), expected.data(), got.size()), 1e-10);
  }
}

}  // namespace
}  // namespace hive

// Without a device there is nothing to compare: exit 77, which ctest reports
// as skipped (SKIP_RETURN_CODE), rather than a pass. A device that is there
// but cannot be used fails.
int main(int argc, char** argv) {
#ifdef HIVE_HAVE_CUDA
  if (const hive::CudaDevices devices = hive::query_cuda_devices(); !devices.error.empty()) {
    std::printf("CUDA devices are present but unusable: %s\n", devices.error.c_str());
    return 1;
  }
#endif
  if (!hive::device_backend()) {
    std::printf("no device backend on this machine (CUDA devices: 0); skipped\n");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
