// hive generate: token ids in, token ids out, with throughput. One prompt
// streams its tokens as they come; several prompts (--prompt-ids repeated, or
// --prompts-file with one comma-separated id list per line) run together
// through the offline engine, one output line per prompt in input order.
#include <chrono>
#include <cstdio>
#include <fstream>

#include "kernels/backend_select.hpp"
#include "kernels/error.hpp"
#include "runtime/generate.hpp"
#include "runtime/llm_engine.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"

namespace hive::cli {

namespace {

// Args keeps one value per flag, so repeated --prompt-ids are taken out first.
std::vector<std::string> take_prompt_flags(const std::vector<std::string>& argv,
                                           std::vector<std::string>& prompts) {
  std::vector<std::string> rest;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--prompt-ids" && i + 1 < argv.size()) {
      prompts.push_back(argv[++i]);
    } else {
      rest.push_back(argv[i]);
    }
  }
  return rest;
}

std::vector<std::vector<int32_t>> read_prompts_file(const std::string& path) {
  std::ifstream in(path);
  check(in.good(), path, ": cannot open");
  std::vector<std::vector<int32_t>> prompts;
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    line.erase(line.find_last_not_of(" \t\r") + 1);
    prompts.push_back(parse_id_list(line, str_cat(path, ":", line_number)));
  }
  check(!prompts.empty(), path, ": no prompts (expected one comma-separated id list per line)");
  return prompts;
}

int generate_one(Model& model, const std::vector<int32_t>& prompt, const GenerateOptions& options) {
  const GenerateResult result = generate(model, prompt, options, [](int32_t token) {
    std::printf("%d ", token);
    std::fflush(stdout);
  });
  std::printf("\n");
  std::fflush(stdout);  // ids first, then the stats on stderr
  const auto decoded = static_cast<double>(result.tokens.size() - 1);
  std::fprintf(stderr, "prefill: %zu tokens in %.3f s (%.1f tokens/s)\n", prompt.size(),
               result.prefill_seconds, static_cast<double>(prompt.size()) / result.prefill_seconds);
  if (decoded > 0)
    std::fprintf(stderr, "decode: %.0f tokens in %.3f s (%.1f tokens/s)%s\n", decoded,
                 result.decode_seconds, decoded / result.decode_seconds,
                 result.stopped_by_eos ? ", stopped at EOS" : "");
  return 0;
}

EngineConfig engine_config(const Args& args) {
  EngineConfig config;
  config.block_size = static_cast<int32_t>(args.get_int("--block-size", 16));
  config.kv_budget.bytes = args.get_int("--kv-budget-mb", 64) << 20;
  config.swap_space_bytes = args.get_int("--swap-space-mb", 0) << 20;
  config.enable_prefix_caching = args.has("--enable-prefix-caching");
  config.scheduler.max_num_seqs = args.get_int("--max-num-seqs", 64);
  config.scheduler.max_num_batched_tokens = args.get_int("--max-num-batched-tokens", 512);
  check(config.kv_budget.bytes > 0, "--kv-budget-mb must be >= 1 (got ",
        args.get("--kv-budget-mb", ""), ")");
  return config;
}

int generate_many(Model& model, const std::vector<std::vector<int32_t>>& prompts,
                  const GenerateOptions& options, const EngineConfig& config) {
  LLMEngine engine(model, config);
  std::vector<Request> requests;
  int64_t prompt_tokens = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    Request r;
    r.id = std::to_string(i);
    r.prompt_token_ids = prompts[i];
    r.sampling = options.sampling;
    r.stop.max_tokens = options.max_tokens;
    r.stop.ignore_eos = options.ignore_eos;
    prompt_tokens += static_cast<int64_t>(prompts[i].size());
    requests.push_back(std::move(r));
  }
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const std::vector<RequestOutput> outputs = engine.generate(std::move(requests));
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  int64_t generated = 0;
  for (const RequestOutput& out : outputs) {
    for (const int32_t token : out.samples.at(0).token_ids) std::printf("%d ", token);
    std::printf("\n");
    generated += static_cast<int64_t>(out.samples.at(0).token_ids.size());
  }
  std::fflush(stdout);
  const EngineStats stats = engine.stats();
  std::fprintf(stderr,
               "%zu requests: %lld prompt + %lld generated tokens in %.3f s (%.1f tokens/s), "
               "%lld steps, up to %lld running\n",
               outputs.size(), static_cast<long long>(prompt_tokens),
               static_cast<long long>(generated), seconds,
               static_cast<double>(prompt_tokens + generated) / seconds,
               static_cast<long long>(stats.scheduler.num_steps),
               static_cast<long long>(stats.scheduler.max_num_running));
  std::fprintf(stderr,
               "KV cache: %d blocks of %d tokens; prefix cache hit %lld of %lld tokens; "
               "preemptions: %lld swap, %lld recompute\n",
               stats.num_device_blocks - 1, config.block_size,
               static_cast<long long>(stats.kv_cache.prefix_hit_tokens),
               static_cast<long long>(stats.kv_cache.prefix_queried_tokens),
               static_cast<long long>(stats.scheduler.num_preemptions_swap),
               static_cast<long long>(stats.scheduler.num_preemptions_recompute));
  return 0;
}

}  // namespace

int run_generate(const std::vector<std::string>& argv) {
  std::vector<std::string> prompt_flags;
  const Args args(take_prompt_flags(argv, prompt_flags),
                  {"--model", "--prompts-file", "--max-tokens", "--temperature", "--top-k",
                   "--top-p", "--seed", "--device", "--block-size", "--max-num-seqs",
                   "--max-num-batched-tokens", "--kv-budget-mb", "--swap-space-mb"},
                  {"--ignore-eos", "--enable-prefix-caching"});
  const std::string model_dir = args.require("--model");
  std::vector<std::vector<int32_t>> prompts;
  for (const std::string& ids : prompt_flags) prompts.push_back(parse_id_list(ids, "--prompt-ids"));
  if (args.has("--prompts-file")) {
    for (auto& p : read_prompts_file(args.get("--prompts-file", ""))) prompts.push_back(p);
  }
  check(!prompts.empty(), "missing required flag --prompt-ids (or --prompts-file)");
  GenerateOptions options;
  options.max_tokens = args.get_int("--max-tokens", 16);
  options.sampling.temperature = static_cast<float>(args.get_double("--temperature", 0.0));
  options.sampling.top_k = static_cast<int>(args.get_int("--top-k", 0));
  options.sampling.top_p = static_cast<float>(args.get_double("--top-p", 1.0));
  options.sampling.seed = static_cast<uint64_t>(args.get_int("--seed", 0));
  options.ignore_eos = args.has("--ignore-eos");
  options.block_size = static_cast<int32_t>(args.get_int("--block-size", 16));
  validate(options.sampling);
  const EngineConfig config = engine_config(args);

  BackendChoice choice = select_backend(args.get("--device", "auto"), Model::required_ops());
  if (!choice.note.empty()) std::fprintf(stderr, "%s\n", choice.note.c_str());
  Model model(model_dir, *choice.backend);
  if (prompts.size() == 1) return generate_one(model, prompts[0], options);
  return generate_many(model, prompts, options, config);
}

}  // namespace hive::cli
