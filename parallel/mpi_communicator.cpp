#include "parallel/mpi_communicator.hpp"

#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

#include "base/error.hpp"

namespace hive {

namespace {

constexpr int kPointToPointTag = 7;

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  fail(call, " failed: ", std::string(text, static_cast<size_t>(length)));
}

int to_int(int64_t value, const char* what) {
  check(value >= 0 && value <= INT_MAX, what, ": ", value,
        " does not fit MPI's int count (split the transfer)");
  return static_cast<int>(value);
}

// Rank c owns elements [begin(c), begin(c + 1)): the chunks differ by at
// most one element.
int64_t chunk_begin(int64_t n, int world, int chunk) { return n * chunk / world; }

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm_, &world_size_), "MPI_Comm_size");
  }
  ~MpiCommunicator() override {
    // A communicator that outlives MPI (a static one) has gone with it.
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }

  void all_reduce_sum(const Tensor& data) override {
    check(data.dtype == DType::f32 && data.is_contiguous() && data.device == Device::cpu,
          "all_reduce_sum: needs a contiguous f32 host tensor (got ", data.shape_text(), ")");
    const int64_t n = data.numel();
    const auto world = static_cast<size_t>(world_size_);
    std::vector<int> chunk(world), offset(world);
    for (int c = 0; c < world_size_; ++c) {
      offset[static_cast<size_t>(c)] = to_int(chunk_begin(n, world_size_, c), "all_reduce_sum");
      chunk[static_cast<size_t>(c)] =
          to_int(chunk_begin(n, world_size_, c + 1), "all_reduce_sum") -
          offset[static_cast<size_t>(c)];
    }
    const int mine = chunk[static_cast<size_t>(rank_)];
    // 1. Chunk `rank_` of every rank, rank 0's first.
    std::vector<float> gathered(static_cast<size_t>(mine) * world);
    std::vector<int> mine_from(world, mine), mine_at(world);
    for (size_t r = 0; r < world; ++r) mine_at[r] = static_cast<int>(r) * mine;
    check_mpi(MPI_Alltoallv(data.data, chunk.data(), offset.data(), MPI_FLOAT, gathered.data(),
                            mine_from.data(), mine_at.data(), MPI_FLOAT, comm_),
              "all_reduce_sum: MPI_Alltoallv");
    // 2. The sum in rank order, as InProcessGroup adds.
    std::vector<float> sum(static_cast<size_t>(mine), 0.0f);
    for (size_t r = 0; r < world; ++r)
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += gathered[r * sum.size() + i];
    // 3. Every summed chunk to every rank.
    check_mpi(MPI_Allgatherv(sum.data(), mine, MPI_FLOAT, data.data, chunk.data(), offset.data(),
                             MPI_FLOAT, comm_),
              "all_reduce_sum: MPI_Allgatherv");
  }

  void all_to_all(const Tensor& send, std::span<const int64_t> send_counts, const Tensor& recv,
                  std::span<const int64_t> recv_counts) override {
    check_all_to_all("all_to_all", world_size_, send, send_counts, recv, recv_counts);
    check(send.device == Device::cpu && recv.device == Device::cpu,
          "all_to_all: needs host tensors");
    const auto row = static_cast<int64_t>(row_bytes(send));
    const auto world = static_cast<size_t>(world_size_);
    std::vector<int> send_bytes(world), send_at(world), recv_bytes(world), recv_at(world);
    int64_t send_offset = 0, recv_offset = 0;
    for (size_t r = 0; r < world; ++r) {
      send_bytes[r] = to_int(send_counts[r] * row, "all_to_all: bytes to one rank");
      recv_bytes[r] = to_int(recv_counts[r] * row, "all_to_all: bytes from one rank");
      send_at[r] = to_int(send_offset, "all_to_all: send offset");
      recv_at[r] = to_int(recv_offset, "all_to_all: recv offset");
      send_offset += send_bytes[r];
      recv_offset += recv_bytes[r];
    }
    // recv_counts come from exchange_counts (as the MoE dispatch does); a
    // check here would cost two more collectives per exchange. A peer that
    // sends more than expected is MPI's truncation error on this rank.
    check_mpi(MPI_Alltoallv(send.data, send_bytes.data(), send_at.data(), MPI_BYTE, recv.data,
                            recv_bytes.data(), recv_at.data(), MPI_BYTE, comm_),
              "all_to_all: MPI_Alltoallv");
  }

  void send(const Tensor& data, int peer) override {
    check_peer(peer);
    check_mpi(MPI_Send(data.data, to_int(static_cast<int64_t>(data.nbytes()), "send: bytes"),
                       MPI_BYTE, peer, kPointToPointTag, comm_),
              "send: MPI_Send");
  }

  void recv(const Tensor& data, int peer) override {
    check_peer(peer);
    // Probe first: a message of another size is an error naming both sizes,
    // and is still received (into scratch), so the channel stays in step.
    MPI_Status status;
    check_mpi(MPI_Probe(peer, kPointToPointTag, comm_, &status), "recv: MPI_Probe");
    int sent = 0;
    check_mpi(MPI_Get_count(&status, MPI_BYTE, &sent), "recv: MPI_Get_count");
    const bool match = static_cast<size_t>(sent) == data.nbytes();
    std::vector<char> scratch(match ? 0 : static_cast<size_t>(sent));
    check_mpi(MPI_Recv(match ? data.data : scratch.data(), sent, MPI_BYTE, peer, kPointToPointTag,
                       comm_, MPI_STATUS_IGNORE),
              "recv: MPI_Recv");
    check(match, "recv: rank ", peer, " sent ", sent, " bytes, rank ", rank_, " expects ",
          data.nbytes());
  }

  void barrier() override { check_mpi(MPI_Barrier(comm_), "barrier: MPI_Barrier"); }

  std::vector<int64_t> exchange_counts(std::span<const int64_t> send_counts) override {
    check(static_cast<int>(send_counts.size()) == world_size_, "exchange_counts: ",
          send_counts.size(), " counts for ", world_size_, " ranks");
    std::vector<int64_t> recv(send_counts.size());
    check_mpi(MPI_Alltoall(send_counts.data(), 1, MPI_INT64_T, recv.data(), 1, MPI_INT64_T, comm_),
              "exchange_counts: MPI_Alltoall");
    return recv;
  }

 private:
  void check_peer(int peer) const {
    check(peer >= 0 && peer < world_size_ && peer != rank_, "point-to-point between ranks ", rank_,
          " and ", peer, " in a group of ", world_size_);
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int world_size_ = 1;
};

class MpiRankGroup final : public RankGroup {
 public:
  MpiRankGroup() {
    check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &world_size_), "MPI_Comm_size");
  }
  int world_size() const override { return world_size_; }
  std::unique_ptr<Communicator> communicator(int rank) override {
    check(rank == rank_, "MPI rank group: this process is rank ", rank_, " of ", world_size_,
          "; rank ", rank, "'s communicator is in its own process");
    return std::make_unique<MpiCommunicator>();
  }
  void abort() override { mpi_abort("the rank group was aborted: ending every rank of the job"); }

 private:
  int rank_ = 0;
  int world_size_ = 1;
};

}  // namespace

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialized = 0;
  check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
  if (!initialized) {
    int provided = MPI_THREAD_SINGLE;
    check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    finalize_ = true;
    check(provided >= MPI_THREAD_SERIALIZED,
          "MPI: this MPI library gives thread level ", provided,
          ", Hive needs MPI_THREAD_SERIALIZED or more (collectives run on worker threads)");
  }
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &world_size_), "MPI_Comm_size");
}

MpiSession::~MpiSession() {
  if (finalize_ && std::uncaught_exceptions() == 0) MPI_Finalize();
}

std::unique_ptr<Communicator> make_mpi_communicator() {
  int initialized = 0;
  check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
  check(initialized != 0, "make_mpi_communicator: MPI is not initialised (no MpiSession)");
  return std::make_unique<MpiCommunicator>();
}

std::shared_ptr<RankGroup> make_mpi_rank_group() {
  int initialized = 0;
  check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
  check(initialized != 0, "make_mpi_rank_group: MPI is not initialised (no MpiSession)");
  return std::make_shared<MpiRankGroup>();
}

std::vector<std::string> mpi_gather_strings(const std::string& mine) {
  int rank = 0, world = 1;
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &world), "MPI_Comm_size");
  int length = to_int(static_cast<int64_t>(mine.size()), "mpi_gather_strings");
  std::vector<int> lengths(static_cast<size_t>(world)), offsets(static_cast<size_t>(world));
  check_mpi(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD),
            "mpi_gather_strings: MPI_Gather");
  int total = 0;
  for (size_t r = 0; r < lengths.size() && rank == 0; ++r) {
    offsets[r] = total;
    total += lengths[r];
  }
  std::string all(static_cast<size_t>(total), '\0');
  check_mpi(MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                        MPI_CHAR, 0, MPI_COMM_WORLD),
            "mpi_gather_strings: MPI_Gatherv");
  std::vector<std::string> strings;
  if (rank == 0)
    for (size_t r = 0; r < lengths.size(); ++r)
      strings.push_back(all.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(lengths[r])));
  return strings;
}

void mpi_abort_if_running() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) mpi_abort("ending the MPI job");
}

void mpi_abort(const char* cause) {
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "rank %d: %s\n", rank, cause);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return; this is for the compiler
}

}  // namespace hive
