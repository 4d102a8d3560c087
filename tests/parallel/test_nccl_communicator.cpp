// The NCCL communicator on the GPUs of this machine, one rank per device,
// each rank on its own thread: every collective's exact result, as for the
// in-process communicator (test_communicator.cpp). Without a CUDA device the
// binary exits 77, which ctest reports as skipped.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <numeric>
#include <thread>
#include <vector>

#include "kernels/cuda/cuda_backend.hpp"
#include "parallel/nccl_communicator.hpp"

namespace hive {
namespace {

// A device copy of host values, freed with the object.
template <class T>
class DeviceVector {
 public:
  explicit DeviceVector(const std::vector<T>& host) : size_(host.size()) {
    EXPECT_EQ(cudaMalloc(&data_, bytes() + 1), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(data_, host.data(), bytes(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceVector() { cudaFree(data_); }
  DeviceVector(const DeviceVector&) = delete;
  DeviceVector& operator=(const DeviceVector&) = delete;

  Tensor tensor(DType dtype, int64_t rows, int64_t cols) const {
    return Tensor::view(data_, dtype, {rows, cols}, Device::cuda);
  }
  std::vector<T> host() const {
    std::vector<T> out(size_);
    EXPECT_EQ(cudaMemcpy(out.data(), data_, bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

 private:
  size_t bytes() const { return size_ * sizeof(T); }
  T* data_ = nullptr;
  size_t size_;
};

// Runs body(communicator) for every rank of a group over all devices.
void run_ranks(const std::function<void(Communicator&)>& body) {
  std::vector<int> devices(static_cast<size_t>(cuda_device_count()));
  std::iota(devices.begin(), devices.end(), 0);
  std::vector<std::unique_ptr<Communicator>> group = make_nccl_group(devices);
  std::vector<std::thread> threads;
  for (auto& comm : group)
    threads.emplace_back([&body, &comm] {
      ASSERT_EQ(cudaSetDevice(comm->rank()), cudaSuccess);
      body(*comm);
    });
  for (std::thread& t : threads) t.join();
}

TEST(NcclCommunicator, AllReduceSums) {
  run_ranks([](Communicator& comm) {
    const int world = comm.world_size();
    const DeviceVector<float> data({static_cast<float>(comm.rank()), 1.0f, 0.25f});
    for (int round = 0; round < 3; ++round) {
      const DeviceVector<float> copy(data.host());
      comm.all_reduce_sum(copy.tensor(DType::f32, 1, 3));
      const std::vector<float> got = copy.host();
      EXPECT_EQ(got[0], static_cast<float>(world * (world - 1) / 2));
      EXPECT_EQ(got[1], static_cast<float>(world));
      EXPECT_EQ(got[2], 0.25f * static_cast<float>(world));
    }
  });
}

TEST(NcclCommunicator, ExchangesCountsAndRowsAllToAll) {
  run_ranks([](Communicator& comm) {
    // Rank s sends (s + d) % 3 + 1 rows to rank d; each row is {s, d, index}.
    const int world = comm.world_size(), s = comm.rank();
    std::vector<int64_t> send_counts;
    std::vector<float> rows;
    for (int d = 0; d < world; ++d) {
      send_counts.push_back((s + d) % 3 + 1);
      for (int64_t i = 0; i < send_counts.back(); ++i)
        rows.insert(rows.end(), {float(s), float(d), float(i)});
    }
    const std::vector<int64_t> recv_counts = comm.exchange_counts(send_counts);
    int64_t total = 0;
    for (int peer = 0; peer < world; ++peer) {
      EXPECT_EQ(recv_counts[static_cast<size_t>(peer)], (peer + s) % 3 + 1);
      total += recv_counts[static_cast<size_t>(peer)];
    }
    const DeviceVector<float> send(rows);
    const DeviceVector<float> recv(std::vector<float>(static_cast<size_t>(total * 3), -1.0f));
    comm.all_to_all(send.tensor(DType::f32, static_cast<int64_t>(rows.size() / 3), 3), send_counts,
                    recv.tensor(DType::f32, total, 3), recv_counts);
    const std::vector<float> got = recv.host();
    size_t at = 0;
    for (int peer = 0; peer < world; ++peer)
      for (int64_t i = 0; i < recv_counts[static_cast<size_t>(peer)]; ++i, at += 3) {
        EXPECT_EQ(got[at], float(peer));
        EXPECT_EQ(got[at + 1], float(s));
        EXPECT_EQ(got[at + 2], float(i));
      }
    comm.barrier();
  });
}

}  // namespace
}  // namespace hive

int main(int argc, char** argv) {
  const hive::CudaDevices devices = hive::query_cuda_devices();
  if (!devices.error.empty()) {
    std::printf("CUDA devices are present but unusable: %s\n", devices.error.c_str());
    return 1;
  }
  if (devices.count == 0) {
    std::printf("no CUDA device on this machine; skipped\n");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
