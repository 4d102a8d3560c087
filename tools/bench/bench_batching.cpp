// Continuous against static batching on a mixed workload, in one run.
//
//   bench_batching --model DIR [--groups G] [--batch B] [--short N] [--long N]
//                  [--prompt-len P] [--repeats R] [--json FILE]
//
// Workload: G groups of B requests; in each group B - 1 short outputs and one
// long one (default 7 x 16 tokens and 1 x 200), prompts of P tokens, greedy,
// end-of-sequence ignored.
//   static:     B requests at a time; the next B start when all are done, so
//               the long request keeps the finished ones' slots idle
//   continuous: every request queued at once, max_num_seqs B; a finished
//               sequence's slot is refilled at the next step
// Both run on the same engine configuration and must produce the same tokens.
// Reported: generated tokens/s (best of R), engine steps, mean sequences per
// step, and the continuous/static throughput ratio.
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "runtime/engine/llm_engine.hpp"

namespace {

using Clock = std::chrono::steady_clock;

std::string flag(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return argv[i + 1];
  return fallback;
}

struct Workload {
  int groups = 8, batch = 8;
  int64_t short_tokens = 16, long_tokens = 200, prompt_len = 24;
};

std::vector<hive::Request> make_requests(const Workload& w, int64_t vocab) {
  std::vector<hive::Request> requests;
  for (int g = 0; g < w.groups; ++g) {
    for (int i = 0; i < w.batch; ++i) {
      hive::Request r;
      r.id = hive::str_cat(g, ".", i);
      for (int64_t t = 0; t < w.prompt_len; ++t)
        r.prompt_token_ids.push_back(
            static_cast<int32_t>((7919 * (g * w.batch + i) + 31 * t) % (vocab - 3) + 3));
      r.stop.max_tokens = i == w.batch - 1 ? w.long_tokens : w.short_tokens;
      r.stop.ignore_eos = true;
      requests.push_back(std::move(r));
    }
  }
  return requests;
}

struct Run {
  double seconds = 0;
  int64_t steps = 0, generated = 0;
  std::vector<std::vector<int32_t>> tokens;
};

Run run(hive::Model& model, const Workload& w, const std::vector<hive::Request>& requests,
        bool continuous) {
  hive::EngineConfig config;
  // Off: the rows repeat their prompts, and each must compute them.
  config.enable_prefix_caching = false;
  config.kv_budget.bytes = int64_t{256} << 20;
  config.scheduler.max_num_seqs = w.batch;
  hive::LLMEngine engine(model, config);
  Run result;
  const auto start = Clock::now();
  std::vector<hive::RequestOutput> outputs;
  if (continuous) {
    outputs = engine.generate(requests);
  } else {
    for (size_t first = 0; first < requests.size(); first += static_cast<size_t>(w.batch)) {
      const std::vector<hive::Request> group(
          requests.begin() + static_cast<ptrdiff_t>(first),
          requests.begin() + static_cast<ptrdiff_t>(first) + w.batch);
      for (hive::RequestOutput& out : engine.generate(group)) outputs.push_back(std::move(out));
    }
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.steps = engine.stats().scheduler.num_steps;
  for (const hive::RequestOutput& out : outputs) {
    result.tokens.push_back(out.samples.at(0).token_ids);
    result.generated += static_cast<int64_t>(out.samples.at(0).token_ids.size());
  }
  return result;
}

// Prints the table and writes the JSON; best[0] is static, best[1] continuous.
void print_and_save(const Workload& w, const Run (&best)[2], int repeats,
                    const std::string& model_dir, const std::string& json_path) {
  const double tps[2] = {static_cast<double>(best[0].generated) / best[0].seconds,
                         static_cast<double>(best[1].generated) / best[1].seconds};
  const double ratio = tps[1] / tps[0];

  std::printf(
      "%d groups x (%d short x %lld + 1 long x %lld tokens), prompts of %lld tokens, "
      "batch %d, %d threads, best of %d\n\n",
      w.groups, w.batch - 1, static_cast<long long>(w.short_tokens),
      static_cast<long long>(w.long_tokens), static_cast<long long>(w.prompt_len), w.batch,
      omp_get_max_threads(), repeats);
  std::printf(
      "| batching | generated tokens | steps | sequences per step | seconds | tokens/s |\n");
  std::printf("|---|---|---|---|---|---|\n");
  const char* names[2] = {"static", "continuous"};
  for (int m = 0; m < 2; ++m)
    std::printf("| %s | %lld | %lld | %.2f | %.3f | %.1f |\n", names[m],
                static_cast<long long>(best[m].generated), static_cast<long long>(best[m].steps),
                static_cast<double>(best[m].generated) / static_cast<double>(best[m].steps),
                best[m].seconds, tps[m]);
  std::printf("\ncontinuous / static throughput: %.2fx (steps: %.2fx fewer); same tokens: yes\n",
              ratio, static_cast<double>(best[0].steps) / static_cast<double>(best[1].steps));

  if (!json_path.empty()) {
    nlohmann::json out = {{"model", model_dir},
                          {"groups", w.groups},
                          {"batch", w.batch},
                          {"short_tokens", w.short_tokens},
                          {"long_tokens", w.long_tokens},
                          {"prompt_tokens", w.prompt_len},
                          {"threads", omp_get_max_threads()},
                          {"throughput_ratio", ratio}};
    for (int m = 0; m < 2; ++m)
      out[names[m]] = {{"generated_tokens", best[m].generated},
                       {"steps", best[m].steps},
                       {"seconds", best[m].seconds},
                       {"tokens_per_s", tps[m]}};
    std::ofstream(json_path) << out.dump(2) << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string model_dir = flag(argc, argv, "--model", "");
  hive::check(!model_dir.empty(),
              "usage: bench_batching --model DIR [--groups G] [--batch B] "
              "[--short N] [--long N] [--prompt-len P] [--repeats R] [--json FILE]");
  Workload w;
  w.groups = std::stoi(flag(argc, argv, "--groups", "8"));
  w.batch = std::stoi(flag(argc, argv, "--batch", "8"));
  w.short_tokens = std::stoll(flag(argc, argv, "--short", "16"));
  w.long_tokens = std::stoll(flag(argc, argv, "--long", "200"));
  w.prompt_len = std::stoll(flag(argc, argv, "--prompt-len", "24"));
  const int repeats = std::stoi(flag(argc, argv, "--repeats", "3"));
  const std::string json_path = flag(argc, argv, "--json", "");
  hive::check(w.groups >= 1 && w.batch >= 2 && repeats >= 1,
              "need >= 1 group, a batch of >= 2 "
              "and >= 1 repeat");

  hive::CpuBackend backend;
  hive::Model model(model_dir, backend);
  const std::vector<hive::Request> requests = make_requests(w, model.config().vocab_size);
  Run best[2];
  for (int r = 0; r < repeats; ++r) {
    for (const bool continuous : {false, true}) {
      Run run_result = run(model, w, requests, continuous);
      Run& slot = best[continuous];
      if (r == 0 || run_result.seconds < slot.seconds) slot = std::move(run_result);
    }
  }
  hive::check(best[0].tokens == best[1].tokens,
              "static and continuous batching disagree on the tokens");
  print_and_save(w, best, repeats, model_dir, json_path);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_batching: error: %s\n", e.what());
  return 1;
}
