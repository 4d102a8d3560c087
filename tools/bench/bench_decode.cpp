// Decode throughput at batch 1 next to the memory-bandwidth roofline of the
// same machine, measured in the same process.
//
//   bench_decode --model DIR [--tokens N] [--prompt-len P] [--json FILE]
//
// The roofline: tools/bench/roofline.hpp.
#include <omp.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "runtime/engine/generate.hpp"
#include "runtime/model/model_stats.hpp"
#include "tools/bench/roofline.hpp"

namespace {

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
  const double bandwidth = hive::bench::probe_read_bandwidth();

  std::vector<int32_t> prompt(static_cast<size_t>(prompt_len));
  for (size_t i = 0; i < prompt.size(); ++i)
    prompt[i] = static_cast<int32_t>((i * 7919) % 1000 + 1);
  hive::GenerateOptions options;
  options.max_tokens = tokens + 1;  // the first comes from prefill
  options.ignore_eos = true;
  const hive::GenerateResult result = hive::generate(model, prompt, options);
  const double tokens_per_s = static_cast<double>(tokens) / result.decode_seconds;

  const hive::ModelConfig& c = model.config();
  const double weight_bytes = hive::bench::decode_weight_bytes_per_token(model);
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
