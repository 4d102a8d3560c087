// The data plane of one MoE layer under expert parallelism: the exchanges
// moe_forward_expert_parallel makes (counts, token rows, expert ids, result
// rows back), timed per layer, against the same exchanges made with raw MPI
// calls (MPI_Alltoall / MPI_Alltoallv on bytes, as osu_alltoallv does).
//
//   mpirun -np W bench_alltoall [--hidden H] [--top-k K] [--iters N] [--json FILE]
//       ranks as processes: Hive's MpiCommunicator against raw MPI, each size
//       measured in alternating rounds, the median per layer
//   bench_alltoall --ranks W [...]
//       ranks as threads of this process: InProcessGroup, the same exchanges
//
// Each rank routes T tokens (T = 1, 16, 64, 256) to top_k experts spread
// evenly over the ranks: T * K rows of H f32 go out, as many come back.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "parallel/in_process_communicator.hpp"
#include "parallel/mpi_communicator.hpp"

namespace {

using namespace hive;
using Clock = std::chrono::steady_clock;

struct Options {
  int64_t hidden = 1024;
  int64_t top_k = 2;
  int iters = 200;
  int threads = 0;  // > 0: in-process ranks
  std::string json;
};

// One layer's buffers on one rank: rows spread evenly over the peers.
struct Layer {
  std::vector<int64_t> counts;
  std::vector<float> rows_out, rows_in, results, returned;
  std::vector<int32_t> ids_out, ids_in;
  int64_t rows = 0;

  // The remainder goes to the next peers after this rank, so that every
  // rank also receives `rows` in all.
  Layer(int world, int rank, int64_t tokens, const Options& o) : rows(tokens * o.top_k) {
    for (int r = 0; r < world; ++r)
      counts.push_back(rows / world + ((r - rank + world) % world < rows % world ? 1 : 0));
    const auto floats = static_cast<size_t>(rows * o.hidden);
    rows_out.assign(floats, 1.0f);
    rows_in.assign(floats, 0.0f);
    results.assign(floats, 2.0f);
    returned.assign(floats, 0.0f);
    ids_out.assign(static_cast<size_t>(rows), 3);
    ids_in.assign(static_cast<size_t>(rows), 0);
  }
  Tensor f32(std::vector<float>& v, int64_t hidden) {
    return Tensor::view(v.data(), DType::f32, {rows, hidden});
  }
  Tensor i32(std::vector<int32_t>& v) { return Tensor::view(v.data(), DType::i32, {rows}); }
  int64_t bytes_moved(int64_t hidden) const {  // out and back, this rank's sends
    return rows * (2 * hidden * 4 + 4) + static_cast<int64_t>(counts.size()) * 8;
  }
};

// The layer's four exchanges through a Communicator.
void hive_layer(Communicator& comm, Layer& l, int64_t hidden) {
  const std::vector<int64_t> in = comm.exchange_counts(l.counts);
  comm.all_to_all(l.f32(l.rows_out, hidden), l.counts, l.f32(l.rows_in, hidden), in);
  comm.all_to_all(l.i32(l.ids_out), l.counts, l.i32(l.ids_in), in);
  comm.all_to_all(l.f32(l.results, hidden), in, l.f32(l.returned, hidden), l.counts);
}

// The same exchanges as raw MPI calls.
void raw_layer(MPI_Comm comm, Layer& l, int64_t hidden) {
  const auto world = l.counts.size();
  std::vector<int64_t> in(world);
  MPI_Alltoall(l.counts.data(), 1, MPI_INT64_T, in.data(), 1, MPI_INT64_T, comm);
  std::vector<int> out_bytes(world), out_at(world), in_bytes(world), in_at(world);
  std::vector<int> out_ids(world), out_ids_at(world), in_ids(world), in_ids_at(world);
  int sent = 0, got = 0;
  for (size_t r = 0; r < world; ++r) {
    out_bytes[r] = static_cast<int>(l.counts[r] * hidden * 4);
    in_bytes[r] = static_cast<int>(in[r] * hidden * 4);
    out_ids[r] = static_cast<int>(l.counts[r] * 4);
    in_ids[r] = static_cast<int>(in[r] * 4);
    out_at[r] = sent * static_cast<int>(hidden) * 4;
    in_at[r] = got * static_cast<int>(hidden) * 4;
    out_ids_at[r] = sent * 4;
    in_ids_at[r] = got * 4;
    sent += static_cast<int>(l.counts[r]);
    got += static_cast<int>(in[r]);
  }
  MPI_Alltoallv(l.rows_out.data(), out_bytes.data(), out_at.data(), MPI_BYTE, l.rows_in.data(),
                in_bytes.data(), in_at.data(), MPI_BYTE, comm);
  MPI_Alltoallv(l.ids_out.data(), out_ids.data(), out_ids_at.data(), MPI_BYTE, l.ids_in.data(),
                in_ids.data(), in_ids_at.data(), MPI_BYTE, comm);
  MPI_Alltoallv(l.results.data(), in_bytes.data(), in_at.data(), MPI_BYTE, l.returned.data(),
                out_bytes.data(), out_at.data(), MPI_BYTE, comm);
}

// Median of `rounds` timings of `iters` layers each, in microseconds per
// layer; every rank starts a round together and takes the slowest rank's time.
template <class Run>
double time_layers(MPI_Comm comm, int iters, Run run) {
  std::vector<double> rounds;
  for (int round = 0; round < 5; ++round) {
    if (comm != MPI_COMM_NULL) MPI_Barrier(comm);
    const auto start = Clock::now();
    for (int i = 0; i < iters; ++i) run();
    double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iters;
    if (comm != MPI_COMM_NULL) MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, comm);
    rounds.push_back(us);
  }
  std::nth_element(rounds.begin(), rounds.begin() + 2, rounds.end());
  return rounds[2];
}

// In-process ranks: each thread times its own layers; the slowest counts.
double time_in_process(int world, int64_t tokens, const Options& o) {
  InProcessGroup group(world);
  std::vector<double> us(static_cast<size_t>(world));
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r)
    ranks.emplace_back([&, r, comm = std::shared_ptr<Communicator>(group.communicator(r))] {
      Layer layer(world, r, tokens, o);
      us[static_cast<size_t>(r)] =
          time_layers(MPI_COMM_NULL, o.iters, [&] { hive_layer(*comm, layer, o.hidden); });
    });
  for (std::thread& t : ranks) t.join();
  return *std::max_element(us.begin(), us.end());
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string name = argv[i], value = argv[i + 1];
    if (name == "--hidden") o.hidden = std::stoll(value);
    else if (name == "--top-k") o.top_k = std::stoll(value);
    else if (name == "--iters") o.iters = std::stoi(value);
    else if (name == "--ranks") o.threads = std::stoi(value);
    else if (name == "--json") o.json = value;
    else fail("bench_alltoall: unknown flag ", name);
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  MpiSession mpi(&argc, &argv);
  const Options o = parse(argc, argv);
  const bool threads = o.threads > 0;
  check(threads != (mpi.world_size() > 1),
        "bench_alltoall: run under mpirun -np W (processes) or alone with --ranks W (threads)");
  const int world = threads ? o.threads : mpi.world_size();
  std::unique_ptr<Communicator> comm = threads ? nullptr : make_mpi_communicator();
  nlohmann::json rows = nlohmann::json::array();
  if (mpi.rank() == 0) {
    std::printf("%d ranks as %s, hidden %lld, top-%lld, f32 rows; us per MoE layer\n", world,
                threads ? "threads (InProcessGroup)" : "processes (MPI)",
                static_cast<long long>(o.hidden), static_cast<long long>(o.top_k));
    std::printf("%8s %12s %12s %12s %8s\n", "tokens", "bytes/rank", threads ? "in-process" : "hive",
                threads ? "" : "raw MPI", threads ? "" : "ratio");
  }
  for (const int64_t tokens : {int64_t{1}, int64_t{16}, int64_t{64}, int64_t{256}}) {
    Layer layer(world, mpi.rank(), tokens, o);
    nlohmann::json row = {{"tokens_per_rank", tokens}, {"bytes_per_rank", layer.bytes_moved(o.hidden)}};
    if (threads) {
      row["in_process_us"] = time_in_process(world, tokens, o);
    } else {
      // Alternate the two so drift on a shared machine hits both alike.
      std::vector<double> ours, raw;
      for (int round = 0; round < 3; ++round) {
        ours.push_back(time_layers(MPI_COMM_WORLD, o.iters, [&] { hive_layer(*comm, layer, o.hidden); }));
        raw.push_back(time_layers(MPI_COMM_WORLD, o.iters, [&] { raw_layer(MPI_COMM_WORLD, layer, o.hidden); }));
      }
      std::sort(ours.begin(), ours.end());
      std::sort(raw.begin(), raw.end());
      row["hive_us"] = ours[1];
      row["raw_mpi_us"] = raw[1];
      row["ratio"] = ours[1] / raw[1];
    }
    if (mpi.rank() == 0) {
      if (threads)
        std::printf("%8lld %12lld %12.1f\n", static_cast<long long>(tokens),
                    static_cast<long long>(layer.bytes_moved(o.hidden)),
                    row["in_process_us"].get<double>());
      else
        std::printf("%8lld %12lld %12.1f %12.1f %7.2fx\n", static_cast<long long>(tokens),
                    static_cast<long long>(layer.bytes_moved(o.hidden)),
                    row["hive_us"].get<double>(), row["raw_mpi_us"].get<double>(),
                    row["ratio"].get<double>());
    }
    rows.push_back(row);
  }
  if (mpi.rank() == 0 && !o.json.empty())
    std::ofstream(o.json) << nlohmann::json{{"world", world},
                                            {"transport", threads ? "in_process" : "mpi"},
                                            {"hidden", o.hidden},
                                            {"top_k", o.top_k},
                                            {"rows", rows}}
                                 .dump(2)
                          << "\n";
  return 0;
}
