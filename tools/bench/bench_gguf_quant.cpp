// Decode throughput of a quantized GGUF run on its blocks (quant_matmul)
// against the same file dequantized to bf16 at load (LoadOptions::dequantize,
// the behaviour before), in one process, through the offline engine as
// bench_rows measures its batch rows:
//
//   bench_gguf_quant --model FILE.gguf [--batches 1,16] [--rounds 5]
//                    [--batch-prompt P] [--batch-decode N] [--json FILE]
//
//   batch B   B prompts of P tokens prefilled in one step, then N decode
//             steps of B tokens each: B x N / s of the decode steps alone
//
// Every round measures each batch on both loads, the load that goes first
// alternating between rounds, so a neighbour's load on a shared machine
// falls on both; one unmeasured round warms up. The table gives the median
// over rounds with the lowest and highest, and the median of each round's
// ratio to bf16 (paired: the two loads of a round ran back to back).
// Prompt tokens are fixed pseudo-random ids; end-of-sequence is ignored.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/thread_pool.hpp"
#include "kernels/quant/quant_matmul.hpp"
#include "runtime/engine/llm_engine.hpp"
#include "tools/bench/bench_request.hpp"
#include "tools/bench/roofline.hpp"
#include "tools/cli/args.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using hive::bench::synthetic_request;

// Tokens per second of the decode steps of `batch` requests running together.
double decode_tokens_per_s(hive::Model& model, int64_t batch, int64_t prompt_len, int64_t tokens) {
  hive::EngineConfig config;  // KV budget: the default share of free memory
  // Off: the rows repeat their prompts, and each must compute them.
  config.enable_prefix_caching = false;
  config.scheduler.max_num_seqs = batch;
  config.scheduler.max_num_batched_tokens = std::max<int64_t>(512, batch * prompt_len);
  hive::LLMEngine engine(model, config);
  for (int64_t i = 0; i < batch; ++i)
    engine.add_request(synthetic_request(i, prompt_len, tokens + 1, model.config().vocab_size));
  engine.step();  // prefills every prompt
  hive::check(engine.scheduler().num_waiting() == 0, "bench_gguf_quant: the first step did not ",
              "prefill every prompt");
  const auto start = Clock::now();
  while (engine.has_unfinished()) engine.step();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  hive::check(engine.stats().scheduler.num_steps == tokens + 1,
              "bench_gguf_quant: the sequences did not decode in lockstep");
  return static_cast<double>(batch * tokens) / seconds;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) try {
  const hive::cli::Args args(
      std::vector<std::string>(argv + 1, argv + argc),
      {"--model", "--batches", "--rounds", "--batch-prompt", "--batch-decode", "--json"}, {});
  const std::string path = args.require("--model");
  const std::vector<int32_t> batches =
      hive::cli::parse_id_list(args.get("--batches", "1,16"), "--batches");
  const int64_t rounds = args.get_int("--rounds", 5, 1);
  const int64_t prompt_len = args.get_int("--batch-prompt", 32, 1);
  const int64_t decode = args.get_int("--batch-decode", 16, 1);
  const std::string json_path = args.get("--json", "");

  hive::CpuBackend backend;
  hive::Model quantized(path, backend);
  hive::Model dequantized(path, backend, hive::LoadOptions{.dequantize = true});
  hive::Model* models[2] = {&quantized, &dequantized};
  const char* names[2] = {"quantized", "dequantized bf16"};
  double bytes[2];
  for (int l = 0; l < 2; ++l) bytes[l] = hive::bench::decode_weight_bytes_per_token(*models[l]);
  std::printf(
      "%s, %d threads, quant kernel %s; weights read per decode token: %.0f MB quantized, "
      "%.0f MB bf16\n",
      path.c_str(), hive::cpu::cpu_threads(), std::string(hive::quant_matmul_kernel_name()).c_str(),
      bytes[0] / 1e6, bytes[1] / 1e6);

  // samples[batch][load]
  std::vector<std::array<std::vector<double>, 2>> samples(batches.size());
  for (int64_t round = -1; round < rounds; ++round) {  // round -1 warms up
    for (size_t b = 0; b < batches.size(); ++b) {
      for (int turn = 0; turn < 2; ++turn) {
        const int l = (turn + static_cast<int>(round + 1)) % 2;
        const double tps = decode_tokens_per_s(*models[l], batches[b], prompt_len, decode);
        if (round >= 0) samples[b][static_cast<size_t>(l)].push_back(tps);
      }
    }
    if (round >= 0) std::fprintf(stderr, "round %lld done\n", static_cast<long long>(round));
  }

  std::printf(
      "\n| batch | weights | decode tok/s (median) | lowest | highest | "
      "vs bf16 (median of rounds) |\n");
  std::printf("|---|---|---|---|---|---|\n");
  nlohmann::json rows = nlohmann::json::array();
  for (size_t b = 0; b < batches.size(); ++b) {
    for (int l = 0; l < 2; ++l) {
      const std::vector<double>& s = samples[b][static_cast<size_t>(l)];
      std::vector<double> ratios;
      for (size_t r = 0; r < s.size(); ++r) ratios.push_back(s[r] / samples[b][1][r]);
      const double med = median(s);
      std::printf("| %d | %s | %.2f | %.2f | %.2f | %.2fx |\n", batches[b], names[l], med,
                  *std::min_element(s.begin(), s.end()), *std::max_element(s.begin(), s.end()),
                  median(ratios));
      rows.push_back({{"batch", batches[b]},
                      {"weights", names[l]},
                      {"tokens_per_s", s},
                      {"median_tokens_per_s", med}});
    }
  }
  if (!json_path.empty()) {
    const nlohmann::json out = {{"model", path},
                                {"threads", hive::cpu::cpu_threads()},
                                {"quant_kernel", hive::quant_matmul_kernel_name()},
                                {"weight_bytes_per_decode_token", {bytes[0], bytes[1]}},
                                {"batch_prompt_tokens", prompt_len},
                                {"batch_decode_tokens", decode},
                                {"rows", rows}};
    std::ofstream(json_path) << out.dump(2) << "\n";
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_gguf_quant: error: %s\n", e.what());
  return 1;
}
