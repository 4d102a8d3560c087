#include "parallel/nccl_communicator.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include "base/error.hpp"

namespace hive {

namespace {

void check_nccl(ncclResult_t result, const char* what) {
  check(result == ncclSuccess, "nccl: ", what, ": ", ncclGetErrorString(result));
}

void check_cuda(cudaError_t status, const char* what) {
  check(status == cudaSuccess, "cuda: ", what, ": ", cudaGetErrorString(status));
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, int rank, int world_size, int device)
      : comm_(comm), rank_(rank), world_size_(world_size), device_(device) {}
  ~NcclCommunicator() override { ncclCommDestroy(comm_); }
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }

  void all_reduce_sum(const Tensor& data) override {
    check(data.dtype == DType::f32 && data.is_contiguous(), "nccl all_reduce_sum: needs ",
          "contiguous f32 (got ", data.shape_text(), ")");
    select_device();
    check_nccl(ncclAllReduce(data.data, data.data, static_cast<size_t>(data.numel()), ncclFloat,
                             ncclSum, comm_, nullptr),
               "all_reduce");
    synchronize();
  }

  void all_to_all(const Tensor& send, std::span<const int64_t> send_counts, const Tensor& recv,
                  std::span<const int64_t> recv_counts) override {
    check_all_to_all("nccl all_to_all", world_size_, send, send_counts, recv, recv_counts);
    const size_t send_row = row_bytes(send), recv_row = row_bytes(recv);
    select_device();
    // Point-to-point pairs inside one group call are NCCL's all-to-all.
    check_nccl(ncclGroupStart(), "group start");
    size_t send_offset = 0, recv_offset = 0;
    for (int peer = 0; peer < world_size_; ++peer) {
      const size_t out = static_cast<size_t>(send_counts[static_cast<size_t>(peer)]) * send_row;
      const size_t in = static_cast<size_t>(recv_counts[static_cast<size_t>(peer)]) * recv_row;
      if (out)
        check_nccl(ncclSend(static_cast<const char*>(send.data) + send_offset, out, ncclUint8, peer,
                            comm_, nullptr),
                   "send");
      if (in)
        check_nccl(ncclRecv(static_cast<char*>(recv.data) + recv_offset, in, ncclUint8, peer, comm_,
                            nullptr),
                   "recv");
      send_offset += out;
      recv_offset += in;
    }
    check_nccl(ncclGroupEnd(), "group end");
    synchronize();
  }

  void send(const Tensor& data, int peer) override {
    select_device();
    check_nccl(ncclSend(data.data, data.nbytes(), ncclUint8, peer, comm_, nullptr), "send");
    synchronize();
  }

  void recv(const Tensor& data, int peer) override {
    select_device();
    check_nccl(ncclRecv(data.data, data.nbytes(), ncclUint8, peer, comm_, nullptr), "recv");
    synchronize();
  }

  std::vector<int64_t> exchange_counts(std::span<const int64_t> send_counts) override {
    const auto n = static_cast<int64_t>(world_size_);
    check(static_cast<int64_t>(send_counts.size()) == n, "exchange_counts: ", send_counts.size(),
          " counts for ", n, " ranks");
    select_device();
    // NCCL reads and writes device memory only.
    int64_t* device = nullptr;
    const size_t bytes = static_cast<size_t>(n) * sizeof(int64_t);
    check_cuda(cudaMalloc(&device, 2 * bytes), "cudaMalloc");
    std::vector<int64_t> recv(static_cast<size_t>(n));
    try {
      check_cuda(cudaMemcpy(device, send_counts.data(), bytes, cudaMemcpyHostToDevice), "copy in");
      const std::vector<int64_t> ones(static_cast<size_t>(n), 1);
      all_to_all(Tensor::view(device, DType::i64, {n}, Device::cuda), ones,
                 Tensor::view(device + n, DType::i64, {n}, Device::cuda), ones);
      check_cuda(cudaMemcpy(recv.data(), device + n, bytes, cudaMemcpyDeviceToHost), "copy out");
    } catch (...) {
      cudaFree(device);
      throw;
    }
    cudaFree(device);
    return recv;
  }

  void barrier() override {
    select_device();
    float* one = nullptr;
    check_cuda(cudaMalloc(&one, sizeof(float)), "cudaMalloc");
    const ncclResult_t result = ncclAllReduce(one, one, 1, ncclFloat, ncclSum, comm_, nullptr);
    synchronize();
    cudaFree(one);
    check_nccl(result, "barrier");
  }

 private:
  void select_device() const { check_cuda(cudaSetDevice(device_), "cudaSetDevice"); }
  void synchronize() const { check_cuda(cudaStreamSynchronize(nullptr), "synchronize"); }

  ncclComm_t comm_;
  int rank_, world_size_, device_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_nccl_group(std::span<const int> devices) {
  const auto n = static_cast<int>(devices.size());
  check(n >= 1, "make_nccl_group: no devices");
  std::vector<ncclComm_t> comms(devices.size());
  check_nccl(ncclCommInitAll(comms.data(), n, devices.data()), "ncclCommInitAll");
  std::vector<std::unique_ptr<Communicator>> group;
  for (int rank = 0; rank < n; ++rank)
    group.push_back(std::make_unique<NcclCommunicator>(comms[static_cast<size_t>(rank)], rank, n,
                                                       devices[static_cast<size_t>(rank)]));
  return group;
}

}  // namespace hive
