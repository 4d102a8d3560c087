// Actor overhead per step at batch 1: what the actor runtime adds to a step
// (plan diff, messages to the worker and back, token events) next to the
// model's compute, measured in the same process.
//
//   bench_actor_overhead --model DIR [--tokens N] [--prompt-len P] [--json FILE]
//
// Two views: (1) inside the engine, per step, the scheduler's send-to-reply
// time against the worker's time in the model runner; (2) end to end, the
// wall time per token through hive::Engine against the offline LLMEngine's
// step loop on the same model and prompt.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "actors/engine.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "tools/cli/args.hpp"

namespace {

using Clock = std::chrono::steady_clock;

hive::Request make_request(int64_t prompt_len, int64_t tokens) {
  hive::Request r;
  r.id = "bench";
  for (int64_t i = 0; i < prompt_len; ++i)
    r.prompt_token_ids.push_back(static_cast<int32_t>(1 + i % 50));
  r.stop.max_tokens = tokens;
  r.stop.ignore_eos = true;
  return r;
}

double offline_seconds(const std::string& model_dir, const hive::EngineConfig& config,
                       const hive::Request& request) {
  hive::CpuBackend cpu;
  hive::Model model(model_dir, cpu);
  hive::LLMEngine warm_up(model, config);  // page the weights in first
  warm_up.generate({request});
  hive::LLMEngine engine(model, config);
  const auto start = Clock::now();
  engine.generate({request});
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const hive::cli::Args args(std::vector<std::string>(argv + 1, argv + argc),
                               {"--model", "--tokens", "--prompt-len", "--json"}, {});
    const std::string model_dir = args.require("--model");
    const int64_t tokens = args.get_int("--tokens", 64);
    const hive::Request request = make_request(args.get_int("--prompt-len", 8), tokens);
    hive::EngineOptions options;
    options.model = model_dir;
    options.engine.kv_budget = hive::KVBudget{int64_t{64} << 20, 0.0};

    const double offline = offline_seconds(model_dir, options.engine, request);
    hive::Engine engine(options);
    const auto start = Clock::now();
    hive::TokenStream stream = engine.submit(request);
    while (stream.next()) {
    }
    const double actor = std::chrono::duration<double>(Clock::now() - start).count();
    const hive::EngineMetrics m = engine.metrics();
    engine.shutdown();

    const double steps = static_cast<double>(m.num_steps);
    const double step_ms = 1e3 * m.step_seconds / steps,
                 compute_ms = 1e3 * m.compute_seconds / steps;
    const double messaging_pct = 100.0 * (m.step_seconds - m.compute_seconds) / m.step_seconds;
    const double end_to_end_pct = 100.0 * (actor - offline) / offline;
    std::printf("model %s, batch 1, %lld steps\n", model_dir.c_str(),
                static_cast<long long>(m.num_steps));
    std::printf(
        "| step (ms) | compute (ms) | messaging (ms) | messaging share | offline (ms/token) | "
        "actors (ms/token) | end-to-end overhead |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
    std::printf("| %.3f | %.3f | %.4f | %.2f %% | %.3f | %.3f | %.2f %% |\n", step_ms, compute_ms,
                step_ms - compute_ms, messaging_pct, 1e3 * offline / steps, 1e3 * actor / steps,
                end_to_end_pct);
    if (args.has("--json")) {
      nlohmann::json j = {{"model", model_dir},
                          {"steps", m.num_steps},
                          {"step_ms", step_ms},
                          {"compute_ms", compute_ms},
                          {"messaging_pct", messaging_pct},
                          {"offline_s", offline},
                          {"actor_s", actor},
                          {"end_to_end_pct", end_to_end_pct}};
      std::ofstream(args.get("--json", "")) << j.dump(2) << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_actor_overhead: %s\n", e.what());
    return 1;
  }
}
