// Decode throughput at batch 1 next to the memory-bandwidth roofline of the
// same machine, measured in the same process.
//
//   bench_decode --model DIR [--tokens N] [--prompt-len P] [--json FILE]
//
// Roofline: a decode step at batch 1 reads every active weight once (plus
// the KV cache, small here), so tokens/s <= bandwidth / bytes per token.
// Bandwidth is probed by summing a buffer far larger than the caches with the
// same threads the model uses.
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/error.hpp"
#include "runtime/engine/generate.hpp"
#include "runtime/model/model_stats.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// Best of several passes of a parallel read of `bytes` bytes; returns bytes/s.
double probe_read_bandwidth(size_t bytes) {
  std::vector<uint64_t> buffer(bytes / sizeof(uint64_t));
  std::iota(buffer.begin(), buffer.end(), 0);  // touch every page
  double best = 0;
  volatile uint64_t sink = 0;
  for (int pass = 0; pass < 5; ++pass) {
    const auto start = Clock::now();
    uint64_t total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static)
    for (size_t i = 0; i < buffer.size(); ++i) total += buffer[i];
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    sink = sink + total;
    best = std::max(best, static_cast<double>(bytes) / seconds);
  }
  return best;
}

std::string flag(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return argv[i + 1];
  return fallback;
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string model_dir = flag(argc, argv, "--model", "");
  hive::check(!model_dir.empty(),
              "usage: bench_decode --model DIR [--tokens N] [--prompt-len P] [--json FILE]");
  const int64_t tokens = std::stoll(flag(argc, argv, "--tokens", "32"));
  const int64_t prompt_len = std::stoll(flag(argc, argv, "--prompt-len", "16"));
  const std::string json_path = flag(argc, argv, "--json", "");

  hive::CpuBackend backend;
  hive::Model model(model_dir, backend);
  const hive::ModelStats stats = hive::model_stats(model.config(), model.weights());
  const double bandwidth = probe_read_bandwidth(size_t{1} << 30);

  std::vector<int32_t> prompt(static_cast<size_t>(prompt_len));
  for (size_t i = 0; i < prompt.size(); ++i)
    prompt[i] = static_cast<int32_t>((i * 7919) % 1000 + 1);
  hive::GenerateOptions options;
  options.max_tokens = tokens + 1;  // the first comes from prefill
  options.ignore_eos = true;
  const hive::GenerateResult result = hive::generate(model, prompt, options);
  const double tokens_per_s = static_cast<double>(tokens) / result.decode_seconds;

  const hive::ModelConfig& c = model.config();
  // Weights touched per token: the active parameters at their stored width,
  // minus the embedding table (one row is read, not the table) unless tied.
  const double bytes_per_param =
      static_cast<double>(stats.weight_bytes) / static_cast<double>(stats.total_parameters);
  double weight_bytes = static_cast<double>(stats.active_parameters) * bytes_per_param;
  if (!c.tie_word_embeddings)
    weight_bytes -= static_cast<double>(c.vocab_size * c.hidden_size) * bytes_per_param;
  const double kv_bytes =
      static_cast<double>(c.kv_bytes_per_token(4)) * static_cast<double>(prompt_len + tokens / 2);
  const double roofline = bandwidth / (weight_bytes + kv_bytes);

  std::printf(
      "| model | params | threads | read GB/s | bytes/token (MB) | roofline tok/s | decode tok/s | "
      "of roofline |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  std::printf("| %s | %.0fM | %d | %.1f | %.0f | %.1f | %.2f | %.0f %% |\n",
              std::string(hive::architecture_name(c.architecture)).c_str(),
              static_cast<double>(stats.total_parameters) / 1e6, omp_get_max_threads(),
              bandwidth / 1e9, (weight_bytes + kv_bytes) / 1e6, roofline, tokens_per_s,
              100.0 * tokens_per_s / roofline);
  if (!json_path.empty()) {
    nlohmann::json out = {{"model", model_dir},
                          {"parameters", stats.total_parameters},
                          {"threads", omp_get_max_threads()},
                          {"read_bandwidth_bytes_per_s", bandwidth},
                          {"bytes_per_token", weight_bytes + kv_bytes},
                          {"roofline_tokens_per_s", roofline},
                          {"decode_tokens_per_s", tokens_per_s},
                          {"fraction_of_roofline", tokens_per_s / roofline},
                          {"decode_tokens", tokens},
                          {"prompt_tokens", prompt_len}};
    std::ofstream(json_path) << out.dump(2) << "\n";
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_decode: error: %s\n", e.what());
  return 1;
}
