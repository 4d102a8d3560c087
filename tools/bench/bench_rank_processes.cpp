// Ranks as processes against ranks as threads: what crossing a process adds
// to the control plane's host time per step, and the tokens per second of
// the two layouts, in one MPI job.
//
//   mpirun -np W --bind-to none bench_rank_processes --model DIR [--batches 1,16,64]
//       [--tokens N] [--prompt-len P] [--repeats R] [--tensor-parallel] [--json FILE]
//
// Rank 0 holds two engines of W ranks on the same model: "threads", every
// rank a worker thread of this process (parallel.transport in_process), and
// "processes", rank r's worker in process r of the job (transport mpi; the
// other processes serve their workers). Each round runs B concurrent
// requests of N tokens through one engine, then the other, the order
// alternating from round to round. Per step, from the scheduler's metrics:
// "step" is the time from when the workers could start a step to their
// last reply reaching the scheduler, "compute" rank 0's time inside the
// model runner (its collectives included), "host" the difference: plan,
// messages to the workers and back, replies. "added" is, per round, the
// processes' host time less the threads', as a share of the threads' step;
// figures are medians of the rounds, the spread is their range.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <latch>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "actors/engine.hpp"
#include "actors/worker_ranks.hpp"
#include "base/error.hpp"
#include "parallel/mpi_communicator.hpp"
#include "tools/cli/args.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Run {
  double step_ms = 0, compute_ms = 0, tokens_per_second = 0;  // step figures per step
  double host_ms() const { return step_ms - compute_ms; }
};

// `batch` requests of `tokens` tokens each, submitted together, to their end.
Run run_batch(hive::Engine& engine, int64_t batch, int64_t prompt_len, int64_t tokens,
              const std::string& tag) {
  std::latch done(batch);
  const hive::EngineMetrics before = engine.metrics();
  const auto start = Clock::now();
  for (int64_t b = 0; b < batch; ++b) {
    hive::Request r;
    r.id = tag + "-" + std::to_string(b);
    for (int64_t i = 0; i < prompt_len; ++i)
      r.prompt_token_ids.push_back(static_cast<int32_t>(1 + (b * 7 + i) % 50));
    r.stop.max_tokens = tokens;
    r.stop.ignore_eos = true;
    engine.submit(std::move(r), [&done](const hive::TokenEvent& event) {
      if (event.finished) done.count_down();
    });
  }
  done.wait();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const hive::EngineMetrics after = engine.metrics();
  const auto steps = static_cast<double>(after.num_steps - before.num_steps);
  Run run;
  run.step_ms = 1e3 * (after.step_seconds - before.step_seconds) / steps;
  run.compute_ms = 1e3 * (after.compute_seconds - before.compute_seconds) / steps;
  run.tokens_per_second = static_cast<double>(batch * tokens) / seconds;
  return run;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

template <class F>
std::vector<double> each(const std::vector<Run>& runs, F f) {
  std::vector<double> out;
  for (const Run& r : runs) out.push_back(f(r));
  return out;
}

struct Pairs {
  std::vector<Run> threads, processes;  // one per round, same order
};

std::vector<int64_t> parse_batches(const std::string& text) {
  std::vector<int64_t> batches;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    batches.push_back(std::stoll(item));
    hive::check(batches.back() >= 1, "--batches: every batch must be >= 1 (got ", item, ")");
  }
  return batches;
}

nlohmann::json side_json(const std::vector<Run>& runs) {
  return {
      {"step_ms", median(each(runs, [](const Run& r) { return r.step_ms; }))},
      {"compute_ms", median(each(runs, [](const Run& r) { return r.compute_ms; }))},
      {"host_ms", median(each(runs, [](const Run& r) { return r.host_ms(); }))},
      {"tokens_per_second", median(each(runs, [](const Run& r) { return r.tokens_per_second; }))}};
}

// The table row and the JSON of one batch size.
nlohmann::json report(int64_t batch, const Pairs& p) {
  std::vector<double> added, host_ratio, speed_ratio;
  for (size_t i = 0; i < p.threads.size(); ++i) {
    const Run& t = p.threads[i];
    const Run& m = p.processes[i];
    added.push_back(100.0 * (m.host_ms() - t.host_ms()) / t.step_ms);
    host_ratio.push_back(m.host_ms() / t.host_ms());
    speed_ratio.push_back(m.tokens_per_second / t.tokens_per_second);
  }
  const nlohmann::json t = side_json(p.threads), m = side_json(p.processes);
  const auto [added_min, added_max] = std::minmax_element(added.begin(), added.end());
  const auto [speed_min, speed_max] = std::minmax_element(speed_ratio.begin(), speed_ratio.end());
  std::printf(
      "| %lld | %.3f / %.3f | %.3f / %.3f | %.4f / %.4f | %.2fx | %+.2f %% (%+.2f .. %+.2f) | "
      "%.1f / %.1f | %.3fx (%.3f .. %.3f) |\n",
      static_cast<long long>(batch), t["step_ms"].get<double>(), m["step_ms"].get<double>(),
      t["compute_ms"].get<double>(), m["compute_ms"].get<double>(), t["host_ms"].get<double>(),
      m["host_ms"].get<double>(), median(host_ratio), median(added), *added_min, *added_max,
      t["tokens_per_second"].get<double>(), m["tokens_per_second"].get<double>(),
      median(speed_ratio), *speed_min, *speed_max);
  return {{"batch", batch},
          {"threads", t},
          {"processes", m},
          {"host_ratio", median(host_ratio)},
          {"added_pct", median(added)},
          {"added_pct_range", {*added_min, *added_max}},
          {"tokens_per_second_ratio", median(speed_ratio)},
          {"tokens_per_second_ratio_range", {*speed_min, *speed_max}}};
}

}  // namespace

int main(int argc, char** argv) {
  try {
    hive::MpiSession mpi(&argc, &argv);
    const hive::cli::Args args(
        std::vector<std::string>(argv + 1, argv + argc),
        {"--model", "--batches", "--tokens", "--prompt-len", "--repeats", "--json"},
        {"--tensor-parallel"});
    hive::check(mpi.world_size() >= 2, "run under mpirun -np W with W >= 2 (got ", mpi.world_size(),
                " process)");
    hive::HiveConfig processes;
    processes.model = args.require("--model");
    processes.engine.kv_budget = hive::KVBudget{int64_t{128} << 20, 0.0};
    processes.parallel.world_size = mpi.world_size();
    processes.parallel.transport = hive::RankTransport::mpi;
    if (args.has("--tensor-parallel"))
      processes.parallel.tensor_parallel_size = processes.parallel.world_size;
    if (mpi.rank() != 0) {
      hive::run_worker_rank(processes);
      return 0;
    }
    const std::vector<int64_t> batches = parse_batches(args.get("--batches", "1,16,64"));
    const int64_t tokens = args.get_int("--tokens", 32);
    const int64_t prompt_len = args.get_int("--prompt-len", 8);
    const int64_t repeats = std::max<int64_t>(1, args.get_int("--repeats", 5));
    hive::HiveConfig threads = processes;
    threads.parallel.transport = hive::RankTransport::in_process;

    hive::Engine engines[2] = {hive::Engine(threads), hive::Engine(processes)};
    // Warm-up: weights paged in, allocations made, at the largest batch.
    const int64_t largest = *std::max_element(batches.begin(), batches.end());
    for (int e : {0, 1})
      run_batch(engines[e], largest, prompt_len, tokens, "w" + std::to_string(e));

    std::vector<Pairs> pairs(batches.size());
    for (int64_t round = 0; round < repeats; ++round) {
      for (size_t b = 0; b < batches.size(); ++b) {
        for (int k : {0, 1}) {
          const int e = static_cast<int>((round + k) % 2);  // who goes first alternates
          const std::string tag =
              "r" + std::to_string(round) + "b" + std::to_string(b) + "e" + std::to_string(e);
          const Run run = run_batch(engines[e], batches[b], prompt_len, tokens, tag);
          (e == 0 ? pairs[b].threads : pairs[b].processes).push_back(run);
        }
      }
    }
    for (hive::Engine& engine : engines) engine.shutdown();

    std::printf(
        "model %s, %d ranks%s, %lld tokens per request, prompt %lld, median of %lld "
        "rounds; each pair threads / processes\n",
        processes.model.c_str(), processes.parallel.world_size,
        processes.parallel.tensor_parallel_size > 1 ? " tensor parallel" : " data parallel + EP",
        static_cast<long long>(tokens), static_cast<long long>(prompt_len),
        static_cast<long long>(repeats));
    std::printf(
        "| batch | step (ms) | compute, rank 0 (ms) | host (ms) | host ratio | added to "
        "the step (range) | tok/s | tok/s ratio (range) |\n");
    std::printf("|---|---|---|---|---|---|---|---|\n");
    nlohmann::json j = {{"model", processes.model.string()},
                        {"world_size", processes.parallel.world_size},
                        {"tensor_parallel_size", processes.parallel.tensor_parallel_size},
                        {"tokens", tokens},
                        {"prompt_len", prompt_len},
                        {"repeats", repeats},
                        {"batches", nlohmann::json::array()}};
    for (size_t b = 0; b < batches.size(); ++b)
      j["batches"].push_back(report(batches[b], pairs[b]));
    if (args.has("--json")) std::ofstream(args.get("--json", "")) << j.dump(2) << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_rank_processes: %s\n", e.what());
    hive::mpi_abort_if_running();
    return 1;
  }
}
