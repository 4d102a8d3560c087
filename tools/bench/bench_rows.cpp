// The rows of the llama.cpp side-by-side (tools/bench/llama_cpp_side_by_side.py),
// measured the way llama-bench and llama-batched-bench measure them, through
// the offline engine (scheduler, paged KV, batched step):
//
//   bench_rows --model DIR [--prefill P] [--decode N] [--batches 16,64]
//              [--batch-prompt P] [--batch-decode N] [--json FILE]
//
//   prefill P        one prompt of P tokens in one step (llama-bench pp P): P / s
//   decode N         one sequence, N tokens one step each after a 1-token
//                    prompt (llama-bench tg N): N / s
//   batch B          B prompts of --batch-prompt tokens prefilled, then
//                    --batch-decode steps of B tokens each (llama-batched-bench
//                    S_TG): B x N / s of the decode steps alone
//
// Each row runs once to warm up (as llama-bench does) and once measured. The
// read bandwidth, the arithmetic peak and each row's roofline (tokens/s no
// engine can pass on this machine, tools/bench/roofline.hpp) are reported
// with them.
// Prompt tokens are fixed pseudo-random ids; end-of-sequence is ignored.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/thread_pool.hpp"
#include "runtime/engine/llm_engine.hpp"
#include "tools/bench/bench_request.hpp"
#include "tools/bench/compute_peak.hpp"
#include "tools/bench/roofline.hpp"
#include "tools/cli/args.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using hive::bench::synthetic_request;

hive::EngineConfig engine_config(int64_t max_seqs, int64_t step_tokens) {
  hive::EngineConfig config;  // KV budget: the default share of free memory
  // Off: the rows repeat their prompts, and each must compute them.
  config.enable_prefix_caching = false;
  config.scheduler.max_num_seqs = max_seqs;
  config.scheduler.max_num_batched_tokens = step_tokens;
  return config;
}

// Seconds of the decode steps of `requests`, all running together: every
// step after the first, which prefills them all (its token budget holds all
// prompts) and gives each its first token.
double timed_decode(hive::LLMEngine& engine, const std::vector<hive::Request>& requests) {
  for (const hive::Request& r : requests) engine.add_request(r);
  engine.step();
  hive::check(
      engine.scheduler().num_waiting() == 0 && engine.scheduler().num_running() == requests.size(),
      "bench_rows: the first step did not prefill every prompt");
  const auto start = Clock::now();
  while (engine.has_unfinished()) engine.step();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  hive::check(engine.stats().scheduler.num_steps == requests.front().stop.max_tokens,
              "bench_rows: the sequences did not decode in lockstep");
  return seconds;
}

double prefill_tokens_per_s(hive::Model& model, int64_t prompt_len, int64_t vocab) {
  double seconds = 0;
  for (int pass = 0; pass < 2; ++pass) {  // the first warms up
    hive::LLMEngine engine(model, engine_config(1, prompt_len));
    engine.add_request(synthetic_request(pass, prompt_len, 1, vocab));
    const auto start = Clock::now();
    while (engine.has_unfinished()) engine.step();
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return static_cast<double>(prompt_len) / seconds;
}

double decode_tokens_per_s(hive::Model& model, int64_t batch, int64_t prompt_len, int64_t tokens,
                           int64_t vocab) {
  double seconds = 0;
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<hive::Request> requests;
    for (int64_t i = 0; i < batch; ++i)
      requests.push_back(synthetic_request(pass * batch + i, prompt_len, tokens + 1, vocab));
    hive::LLMEngine engine(model, engine_config(batch, std::max<int64_t>(512, batch * prompt_len)));
    seconds = timed_decode(engine, requests);
  }
  return static_cast<double>(batch * tokens) / seconds;
}

}  // namespace

int main(int argc, char** argv) try {
  const hive::cli::Args args(std::vector<std::string>(argv + 1, argv + argc),
                             {"--model", "--prefill", "--decode", "--batches", "--batch-prompt",
                              "--batch-decode", "--json"},
                             {});
  const std::string model_dir = args.require("--model");
  const int64_t prefill = args.get_int("--prefill", 512, 0);
  const int64_t decode = args.get_int("--decode", 64, 0);
  const std::string batch_list = args.get("--batches", "16,64");
  const std::vector<int32_t> batches = batch_list.empty()
                                           ? std::vector<int32_t>{}
                                           : hive::cli::parse_id_list(batch_list, "--batches");
  const int64_t batch_prompt = args.get_int("--batch-prompt", 32, 1);
  const int64_t batch_decode = args.get_int("--batch-decode", 16, 1);
  const std::string json_path = args.get("--json", "");

  hive::CpuBackend backend;
  hive::Model model(model_dir, backend);
  const int64_t vocab = model.config().vocab_size;

  const double bandwidth = hive::bench::probe_read_bandwidth();
  const hive::bench::ComputePeak peak = hive::bench::probe_compute_peak(hive::cpu::cpu_threads());
  const double bytes_per_token = hive::bench::decode_weight_bytes_per_token(model);
  const hive::bench::ModelArithmetic arithmetic = hive::bench::model_arithmetic(model);
  std::printf(
      "%s, %d threads, read %.1f GB/s, %.0f MB of weights per decode token, peak %.0f "
      "GFLOP/s (%s)\n\n",
      model_dir.c_str(), hive::cpu::cpu_threads(), bandwidth / 1e9, bytes_per_token / 1e6,
      peak.flops_per_s / 1e9, peak.instruction.empty() ? "no SIMD path" : peak.instruction.c_str());
  std::printf("| row | tok/s | roofline tok/s | of roofline |\n|---|---|---|---|\n");
  nlohmann::json rows = nlohmann::json::array();
  const auto add = [&](const std::string& row, double tokens_per_s, double roofline) {
    std::printf("| %s | %.2f | %.1f | %.0f %% |\n", row.c_str(), tokens_per_s, roofline,
                100 * tokens_per_s / roofline);
    std::fflush(stdout);
    rows.push_back(
        {{"row", row}, {"tokens_per_s", tokens_per_s}, {"roofline_tokens_per_s", roofline}});
  };
  // Without a probed peak (the scalar path) the compute-bound rows' roofline
  // is the memory one alone.
  const double flops_per_s = peak.flops_per_s > 0 ? peak.flops_per_s : 1e300;
  if (prefill > 0)
    add("pp" + std::to_string(prefill), prefill_tokens_per_s(model, prefill, vocab),
        hive::bench::prefill_roofline(arithmetic, prefill, bandwidth, flops_per_s));
  if (decode > 0)
    add("tg" + std::to_string(decode), decode_tokens_per_s(model, 1, 1, decode, vocab),
        bandwidth / bytes_per_token);
  for (const int32_t b : batches)
    add("batch" + std::to_string(b),
        decode_tokens_per_s(model, b, batch_prompt, batch_decode, vocab),
        hive::bench::batch_decode_roofline(arithmetic, b, batch_prompt, batch_decode, bandwidth,
                                           flops_per_s));
  if (!json_path.empty()) {
    const nlohmann::json out = {{"engine", "hive"},
                                {"model", model_dir},
                                {"threads", hive::cpu::cpu_threads()},
                                {"read_bandwidth_bytes_per_s", bandwidth},
                                {"peak_flops_per_s", peak.flops_per_s},
                                {"peak_instruction", peak.instruction},
                                {"weight_bytes_per_decode_token", bytes_per_token},
                                {"batch_prompt_tokens", batch_prompt},
                                {"batch_decode_tokens", batch_decode},
                                {"rows", rows}};
    std::ofstream(json_path) << out.dump(2) << "\n";
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_rows: error: %s\n", e.what());
  return 1;
}
