#include "parallel/nccl_rank_communicator.hpp"

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "kernels/cuda/rank_order_sum.cuh"

namespace hive {

namespace {

using Clock = std::chrono::steady_clock;

// One peer's bytes of an exchange: where they start and how many.
struct Span {
  size_t offset = 0;
  size_t bytes = 0;
};

// As MpiCommunicator: rank c owns elements [begin(c), begin(c + 1)).
int64_t chunk_begin(int64_t n, int world, int chunk) {
  return n * chunk / world;
}

// Regions carved from one device buffer start on 256-byte boundaries.
size_t aligned(size_t bytes) {
  return (bytes + 255) / 256 * 256;
}

class NcclRankCommunicator final : public Communicator {
 public:
  NcclRankCommunicator(int rank, int world_size, int device, std::chrono::milliseconds timeout)
      : rank_(rank), world_size_(world_size), device_(device), timeout_(timeout) {
    try {
      join();
    } catch (...) {
      release();
      throw;
    }
  }
  ~NcclRankCommunicator() override {
    if (comm_ != nullptr && !aborted_) finalize();
    release();
  }
  NcclRankCommunicator(const NcclRankCommunicator&) = delete;
  NcclRankCommunicator& operator=(const NcclRankCommunicator&) = delete;

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }

  void all_reduce_sum(const Tensor& data) override {
    check(data.dtype == DType::f32 && data.is_contiguous(), "nccl all_reduce_sum: needs a ",
          "contiguous f32 tensor (got ", data.shape_text(), ")");
    begin();
    const int64_t n = data.numel();
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    if (data.device == Device::cuda) {
      reduce_on_device(static_cast<float*>(data.data), n, scratch(reduce_work_bytes(n)));
      return;
    }
    char* staged = scratch(aligned(bytes) + reduce_work_bytes(n));
    copy_to_device(staged, data.data, bytes);
    reduce_on_device(reinterpret_cast<float*>(staged), n, staged + aligned(bytes));
    copy_to_host(data.data, staged, bytes);
  }

  void all_to_all(const Tensor& send, std::span<const int64_t> send_counts, const Tensor& recv,
                  std::span<const int64_t> recv_counts) override {
    check_all_to_all("nccl all_to_all", world_size_, send, send_counts, recv, recv_counts);
    check(send.device == recv.device, "nccl all_to_all: send and recv on one device");
    begin();
    const size_t row = row_bytes(send);
    std::vector<Span> out(static_cast<size_t>(world_size_)), in(out.size());
    size_t send_bytes = 0, recv_bytes = 0;
    for (size_t peer = 0; peer < out.size(); ++peer) {
      out[peer] = {send_bytes, static_cast<size_t>(send_counts[peer]) * row};
      in[peer] = {recv_bytes, static_cast<size_t>(recv_counts[peer]) * row};
      send_bytes += out[peer].bytes;
      recv_bytes += in[peer].bytes;
    }
    if (send.device == Device::cuda) {
      exchange(static_cast<const char*>(send.data), out, static_cast<char*>(recv.data), in,
               "all_to_all");
      return;
    }
    char* staged = scratch(aligned(send_bytes) + recv_bytes);
    copy_to_device(staged, send.data, send_bytes);
    exchange(staged, out, staged + aligned(send_bytes), in, "all_to_all");
    copy_to_host(recv.data, staged + aligned(send_bytes), recv_bytes);
  }

  // NCCL cannot probe: the peer must send exactly data.nbytes() (a size
  // that differs is not detected; the deadline ends a transfer that hangs).
  void send(const Tensor& data, int peer) override { point_to_point(data, peer, true); }
  void recv(const Tensor& data, int peer) override { point_to_point(data, peer, false); }

  void barrier() override {
    begin();
    // One float all-reduced: every rank must arrive; the value is not used.
    auto* one = reinterpret_cast<float*>(scratch(sizeof(float)));
    enqueue(ncclAllReduce(one, one, 1, ncclFloat, ncclSum, comm_, stream_), "barrier");
    wait("barrier");
  }

 private:
  // Rank 0's id to every rank over MPI, then ncclCommInitRank, non-blocking
  // so that a peer that never joins is the deadline's fault, not a hang.
  void join() {
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    ncclUniqueId id{};
    if (rank_ == 0) {
      const ncclResult_t made = ncclGetUniqueId(&id);
      check(made == ncclSuccess, "nccl rank 0: ncclGetUniqueId: ", ncclGetErrorString(made));
    }
    check(MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS,
          "nccl rank ", rank_, ": MPI_Bcast of the NCCL unique id failed");
    // A blocking stream: it waits for work queued on the default stream (a
    // backend's), so NCCL reads a tensor only once it is written.
    check_cuda(cudaStreamCreate(&stream_), "cudaStreamCreate");
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    const ncclResult_t started = ncclCommInitRankConfig(&comm_, world_size_, id, rank_, &config);
    if (started != ncclSuccess && started != ncclInProgress) {
      if (comm_ != nullptr) fault("ncclCommInitRank", describe(started));
      fail("nccl rank ", rank_, " of ", world_size_, ": ncclCommInitRank: ", describe(started));
    }
    wait("ncclCommInitRank");
  }

  // A finished communicator: flushed, then freed locally; one that cannot
  // finish in time (a peer gone) is aborted instead of waited for.
  void finalize() {
    cudaSetDevice(device_);
    ncclResult_t state = ncclCommFinalize(comm_);
    const Clock::time_point deadline = Clock::now() + timeout_;
    while (state == ncclInProgress && Clock::now() < deadline) {
      std::this_thread::yield();
      if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) break;
    }
    if (state == ncclSuccess)
      ncclCommDestroy(comm_);
    else
      ncclCommAbort(comm_);
    comm_ = nullptr;
  }

  void release() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    if (scratch_ != nullptr) cudaFree(scratch_);
    stream_ = nullptr;
    scratch_ = nullptr;
  }

  void begin() {
    check(!aborted_, "nccl rank ", rank_, ": the communicator was aborted after a fault");
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
  }

  // Bytes reduce_on_device needs besides the data: every rank's copy of
  // this rank's chunk, and their sum.
  size_t reduce_work_bytes(int64_t n) const {
    const auto mine = static_cast<size_t>(chunk_begin(n, world_size_, rank_ + 1) -
                                          chunk_begin(n, world_size_, rank_));
    return aligned(mine * sizeof(float) * static_cast<size_t>(world_size_)) + mine * sizeof(float);
  }

  void reduce_on_device(float* data, int64_t n, char* work) {
    const auto world = static_cast<size_t>(world_size_);
    const int64_t mine =
        chunk_begin(n, world_size_, rank_ + 1) - chunk_begin(n, world_size_, rank_);
    const size_t mine_bytes = static_cast<size_t>(mine) * sizeof(float);
    auto* gathered = reinterpret_cast<float*>(work);  // world x mine, rank 0's first
    auto* sum = reinterpret_cast<float*>(work + aligned(mine_bytes * world));
    // chunks[c]: chunk c of data; copies[c]: rank c's copy of this rank's chunk.
    std::vector<Span> chunks(world), copies(world), sums(world, Span{0, mine_bytes});
    for (size_t c = 0; c < world; ++c) {
      const int64_t first = chunk_begin(n, world_size_, static_cast<int>(c));
      const int64_t count = chunk_begin(n, world_size_, static_cast<int>(c) + 1) - first;
      chunks[c] = {static_cast<size_t>(first) * sizeof(float),
                   static_cast<size_t>(count) * sizeof(float)};
      copies[c] = {c * mine_bytes, mine_bytes};
    }
    // 1. Chunk c of this rank's data to rank c; this rank's chunk from all.
    exchange(reinterpret_cast<const char*>(data), chunks, reinterpret_cast<char*>(gathered), copies,
             "all_reduce_sum (chunks to their owners)");
    // 2. Their sum in rank order; the stream runs it before step 3.
    const cudaError_t added =
        cuda::launch_rank_order_sum(gathered, world_size_, mine, sum, stream_);
    if (added != cudaSuccess)
      fault("all_reduce_sum (rank-order sum)", str_cat("cuda: ", cudaGetErrorString(added)));
    // 3. This rank's sum to every rank; rank c's sum into chunk c.
    exchange(reinterpret_cast<const char*>(sum), sums, reinterpret_cast<char*>(data), chunks,
             "all_reduce_sum (sums to every rank)");
  }

  // Every peer's bytes out and in, one grouped call; done when it returns.
  void exchange(const char* send, const std::vector<Span>& out, char* recv,
                const std::vector<Span>& in, const char* what) {
    enqueue(ncclGroupStart(), what);
    for (int peer = 0; peer < world_size_; ++peer) {
      const Span& o = out[static_cast<size_t>(peer)];
      const Span& i = in[static_cast<size_t>(peer)];
      if (o.bytes > 0)
        enqueue(ncclSend(send + o.offset, o.bytes, ncclUint8, peer, comm_, stream_), what);
      if (i.bytes > 0)
        enqueue(ncclRecv(recv + i.offset, i.bytes, ncclUint8, peer, comm_, stream_), what);
    }
    enqueue(ncclGroupEnd(), what);
    wait(what);
  }

  void point_to_point(const Tensor& data, int peer, bool sending) {
    const char* what = sending ? "send" : "recv";
    check(peer >= 0 && peer < world_size_ && peer != rank_, "point-to-point between ranks ", rank_,
          " and ", peer, " in a group of ", world_size_);
    check(data.is_contiguous(), "nccl ", what, ": needs a contiguous tensor");
    begin();
    const size_t bytes = data.nbytes();
    char* device = data.device == Device::cuda ? static_cast<char*>(data.data) : scratch(bytes);
    if (data.device != Device::cuda && sending) copy_to_device(device, data.data, bytes);
    enqueue(sending ? ncclSend(device, bytes, ncclUint8, peer, comm_, stream_)
                    : ncclRecv(device, bytes, ncclUint8, peer, comm_, stream_),
            what);
    wait(what);
    if (data.device != Device::cuda && !sending) copy_to_host(data.data, device, bytes);
  }

  // A device buffer of at least `bytes`, kept between calls (the stream is
  // idle whenever this runs: every call waits for its work).
  char* scratch(size_t bytes) {
    if (bytes > scratch_bytes_) {
      if (scratch_ != nullptr) cudaFree(scratch_);
      scratch_ = nullptr;
      scratch_bytes_ = 0;
      check_cuda(cudaMalloc(&scratch_, bytes), "cudaMalloc (staging buffer)");
      scratch_bytes_ = bytes;
    }
    return static_cast<char*>(scratch_);
  }

  void copy_to_device(void* device, const void* host, size_t bytes) {
    if (bytes == 0) return;
    const cudaError_t copied =
        cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_);
    if (copied != cudaSuccess) fault("copy to the device", cudaGetErrorString(copied));
  }

  void copy_to_host(void* host, const void* device, size_t bytes) {
    if (bytes == 0) return;
    const cudaError_t copied =
        cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_);
    if (copied != cudaSuccess) fault("copy to the host", cudaGetErrorString(copied));
    wait("copy to the host");
  }

  void enqueue(ncclResult_t result, const char* what) {
    if (result != ncclSuccess && result != ncclInProgress) fault(what, describe(result));
  }

  // Until the communicator is ready and the stream has drained: NCCL's
  // recommended loop for a non-blocking communicator, with a deadline.
  void wait(const char* what) {
    const Clock::time_point deadline = Clock::now() + timeout_;
    for (;;) {
      ncclResult_t state = ncclSuccess;
      const ncclResult_t asked = ncclCommGetAsyncError(comm_, &state);
      if (asked != ncclSuccess) fault(what, describe(asked));
      if (state != ncclSuccess && state != ncclInProgress) fault(what, describe(state));
      if (state == ncclSuccess) {
        const cudaError_t done = cudaStreamQuery(stream_);
        if (done == cudaSuccess) return;
        if (done != cudaErrorNotReady) fault(what, str_cat("cuda: ", cudaGetErrorString(done)));
      }
      if (Clock::now() > deadline)
        fault(what, str_cat("not done after ", timeout_.count(),
                            " ms (a peer gone, or not in this collective)"));
      std::this_thread::yield();
    }
  }

  // Aborts the communicator (no operation of it is left waiting on the
  // device) and throws; the communicator cannot be used again.
  [[noreturn]] void fault(const char* what, const std::string& cause) {
    aborted_ = true;
    ncclCommAbort(comm_);
    fail("nccl rank ", rank_, " of ", world_size_, ": ", what, ": ", cause,
         " (its NCCL communicator is aborted)");
  }

  std::string describe(ncclResult_t result) const {
    const char* last = comm_ != nullptr ? ncclGetLastError(comm_) : nullptr;
    return str_cat(ncclGetErrorString(result),
                   last != nullptr && *last != '\0' ? str_cat(": ", last) : std::string());
  }

  static void check_cuda(cudaError_t status, const char* what) {
    check(status == cudaSuccess, "cuda: ", what, ": ", cudaGetErrorString(status));
  }

  int rank_, world_size_, device_;
  std::chrono::milliseconds timeout_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  bool aborted_ = false;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_rank_communicator(int rank, int world_size, int device,
                                                          std::chrono::milliseconds timeout) {
  return std::make_unique<NcclRankCommunicator>(rank, world_size, device, timeout);
}

}  // namespace hive
