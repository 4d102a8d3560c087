// Actor overhead per step at batch 1: what the actor runtime adds to a step
// (plan diff, messages to the worker and back, token events) next to the
// model's compute, measured in the same process.
//
//   bench_actor_overhead --model DIR [--tokens N] [--prompt-len P] [--repeats R]
//                        [--world-size W [--tensor-parallel]] [--json FILE]
//
// Two views, each the median of R alternating runs (a shared machine's noise
// hits both sides alike): (1) inside the engine, per step, the scheduler's
// step time (plan, send, reply, stream) against the worker's time in the
// model runner; (2) end to end, the wall time per token through hive::Engine
// against the offline LLMEngine's step loop on the same model and prompt.
// One row per way of scheduling (async: two steps in flight, the default;
// one step at a time) and per way of receiving tokens: a blocking
// TokenStream (each token wakes the reading thread) and a callback (run on
// the engine's thread). With async scheduling a step's time runs from when
// the worker could start it (the step before answered) to its answer, so
// "messaging" is what the worker waits between steps plus the reply.
// With --world-size W the engine runs W ranks (data parallel with experts
// spread over them, or with --tensor-parallel one model split W ways), each
// worker on its own thread; "compute" is then rank 0's, and the offline
// baseline stays one rank.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "actors/engine.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "tools/cli/args.hpp"

namespace {

using Clock = std::chrono::steady_clock;

hive::Request make_request(const std::string& id, int64_t prompt_len, int64_t tokens) {
  hive::Request r;
  r.id = id;
  for (int64_t i = 0; i < prompt_len; ++i)
    r.prompt_token_ids.push_back(static_cast<int32_t>(1 + i % 50));
  r.stop.max_tokens = tokens;
  r.stop.ignore_eos = true;
  return r;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct Sample {
  double step_ms = 0, compute_ms = 0, offline_ms = 0, actor_ms = 0;  // per step / token
};

// Runs the request through the engine to its end, by stream or by callback.
void run_through(hive::Engine& engine, const hive::Request& request, bool callback) {
  if (!callback) {
    for (auto stream = engine.submit(request); stream.next();) {
    }
    return;
  }
  std::promise<void> done;
  engine.submit(request, [&done](const hive::TokenEvent& event) {
    if (event.finished) done.set_value();
  });
  done.get_future().wait();
}

struct Row {
  const char* scheduling;
  const char* receiver;
  double step_ms, compute_ms, messaging_pct, offline_ms, actor_ms, end_to_end_pct;
};

double median_of(const std::vector<Sample>& samples, double Sample::*field) {
  std::vector<double> v;
  for (const Sample& s : samples) v.push_back(s.*field);
  return median(v);
}

Row summarize(const char* scheduling, const char* receiver, const std::vector<Sample>& samples) {
  std::vector<double> messaging, end_to_end;
  for (const Sample& s : samples) {
    messaging.push_back(100.0 * (s.step_ms - s.compute_ms) / s.step_ms);
    end_to_end.push_back(100.0 * (s.actor_ms - s.offline_ms) / s.offline_ms);
  }
  return {scheduling,
          receiver,
          median_of(samples, &Sample::step_ms),
          median_of(samples, &Sample::compute_ms),
          median(messaging),
          median_of(samples, &Sample::offline_ms),
          median_of(samples, &Sample::actor_ms),
          median(end_to_end)};
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const hive::cli::Args args(
        std::vector<std::string>(argv + 1, argv + argc),
        {"--model", "--tokens", "--prompt-len", "--repeats", "--world-size", "--json"},
        {"--tensor-parallel"});
    const std::string model_dir = args.require("--model");
    const int64_t tokens = args.get_int("--tokens", 64);
    const int64_t prompt_len = args.get_int("--prompt-len", 8);
    const int64_t repeats = std::max<int64_t>(1, args.get_int("--repeats", 5));
    hive::HiveConfig options;
    options.model = model_dir;
    options.engine.kv_budget = hive::KVBudget{int64_t{64} << 20, 0.0};
    options.parallel.world_size = static_cast<int>(args.get_int("--world-size", 1));
    if (args.has("--tensor-parallel"))
      options.parallel.tensor_parallel_size = options.parallel.world_size;

    hive::CpuBackend cpu;
    hive::Model model(model_dir, cpu);
    hive::HiveConfig one_step = options;
    one_step.engine.scheduler.async_scheduling = false;
    hive::Engine engines[2] = {hive::Engine(options), hive::Engine(one_step)};  // [0] async
    // Warm-up on every side: weights paged in, allocations made.
    hive::LLMEngine(model, options.engine).generate({make_request("w", prompt_len, tokens)});
    for (hive::Engine& engine : engines)
      run_through(engine, make_request("w", prompt_len, tokens), false);

    std::vector<Sample> samples[2][2];  // [one step][callback]
    for (int64_t i = 0; i < repeats; ++i) {
      for (const bool callback : {false, true}) {
        const hive::Request request =
            make_request("r" + std::to_string(2 * i + callback), prompt_len, tokens);
        hive::LLMEngine offline(model, options.engine);
        auto start = Clock::now();
        offline.generate({request});
        const double offline_s = seconds_since(start);
        for (const int e : {0, 1}) {
          hive::Engine& engine = engines[e];
          const hive::EngineMetrics before = engine.metrics();
          start = Clock::now();
          run_through(engine, request, callback);
          const double actor_s = seconds_since(start);
          const hive::EngineMetrics after = engine.metrics();
          const auto steps = static_cast<double>(after.num_steps - before.num_steps);
          Sample s;
          s.step_ms = 1e3 * (after.step_seconds - before.step_seconds) / steps;
          s.compute_ms = 1e3 * (after.compute_seconds - before.compute_seconds) / steps;
          s.offline_ms = 1e3 * offline_s / steps;
          s.actor_ms = 1e3 * actor_s / steps;
          samples[e][callback].push_back(s);
        }
      }
    }
    for (hive::Engine& engine : engines) engine.shutdown();

    const Row rows[] = {summarize("async", "stream", samples[0][0]),
                        summarize("async", "callback", samples[0][1]),
                        summarize("one step", "stream", samples[1][0]),
                        summarize("one step", "callback", samples[1][1])};
    std::printf("model %s, batch 1, %lld tokens, median of %lld runs, %d rank(s)%s\n",
                model_dir.c_str(), static_cast<long long>(tokens), static_cast<long long>(repeats),
                options.parallel.world_size,
                options.parallel.tensor_parallel_size > 1 ? " tensor parallel" : "");
    std::printf(
        "| scheduling | tokens to | step (ms) | compute (ms) | messaging (ms) | messaging share | "
        "offline (ms/token) | actors (ms/token) | end-to-end overhead |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|\n");
    nlohmann::json j = {{"model", model_dir},
                        {"tokens", tokens},
                        {"repeats", repeats},
                        {"world_size", options.parallel.world_size},
                        {"tensor_parallel_size", options.parallel.tensor_parallel_size}};
    for (const Row& r : rows) {
      std::printf("| %s | %s | %.3f | %.3f | %.4f | %.2f %% | %.3f | %.3f | %.2f %% |\n",
                  r.scheduling, r.receiver, r.step_ms, r.compute_ms, r.step_ms - r.compute_ms,
                  r.messaging_pct, r.offline_ms, r.actor_ms, r.end_to_end_pct);
      j[std::string(r.scheduling) + " " + r.receiver] = {{"step_ms", r.step_ms},
                                                         {"compute_ms", r.compute_ms},
                                                         {"messaging_pct", r.messaging_pct},
                                                         {"offline_ms", r.offline_ms},
                                                         {"actor_ms", r.actor_ms},
                                                         {"end_to_end_pct", r.end_to_end_pct}};
    }
    if (args.has("--json")) std::ofstream(args.get("--json", "")) << j.dump(2) << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_actor_overhead: %s\n", e.what());
    return 1;
  }
}
