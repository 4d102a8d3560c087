// hive run: a batch of prompts through the actor runtime, from a YAML launch
// file. Prompts are JSON lines: {"id": "a", "prompt_ids": [1, 2, 3],
// "max_tokens": 16, "temperature": 0, "seed": 0, "ignore_eos": false}, or
// with text instead of ids: {"prompt": "Once upon a time"} (tokenized with
// the model's tokenizer; "chat": true applies its chat template). Outputs
// are ids for id prompts and a JSON string for text prompts.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "actors/engine.hpp"
#include "kernels/error.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/text_prompt.hpp"

namespace hive::cli {

namespace {

// The model's tokenizer, loaded the first time a text prompt needs it.
class LazyTokenizer {
 public:
  explicit LazyTokenizer(std::filesystem::path model_dir) : dir_(std::move(model_dir)) {}
  const Tokenizer& get() {
    if (!tokenizer_) tokenizer_.emplace(Tokenizer::from_directory(dir_.string()));
    return *tokenizer_;
  }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::optional<Tokenizer> tokenizer_;
};

std::vector<Request> read_prompts(const std::string& path, LazyTokenizer& tokenizer,
                                  std::set<std::string>& text_ids) {
  std::ifstream in(path);
  check(in.good(), "--prompts: cannot open ", path);
  std::vector<Request> requests;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      Request r;
      r.id = j.value("id", "prompt-" + std::to_string(number));
      check(j.contains("prompt") != j.contains("prompt_ids"), path, ":", number,
            ": give \"prompt\" (text) or \"prompt_ids\", not both or neither");
      if (j.contains("prompt")) {
        r.prompt_token_ids =
            encode_prompt(tokenizer.get(), tokenizer.dir(), j.at("prompt").get<std::string>(),
                          j.value("chat", false));
        text_ids.insert(r.id);
      } else {
        r.prompt_token_ids = j.at("prompt_ids").get<std::vector<int32_t>>();
      }
      r.stop.max_tokens = j.value("max_tokens", int64_t{16});
      r.stop.ignore_eos = j.value("ignore_eos", false);
      r.sampling.temperature = j.value("temperature", 0.0f);
      r.sampling.seed = j.value("seed", uint64_t{0});
      requests.push_back(std::move(r));
    } catch (const nlohmann::json::exception& e) {
      fail(path, ":", number, ": ", e.what());
    }
  }
  check(!requests.empty(), path, ": no prompts");
  return requests;
}

// Expert load over the run: how even the routing was, and what was replicated.
void print_expert_load(const EngineMetrics& m) {
  double worst = 0;
  size_t worst_layer = 0;
  int64_t routed = 0;
  for (size_t l = 0; l < m.expert_imbalance.size(); ++l)
    if (m.expert_imbalance[l] > worst) worst = m.expert_imbalance[l], worst_layer = l;
  for (const int64_t n : m.expert_load) routed += n;
  std::string replicated;
  for (const int32_t e : m.replicated_experts) replicated += " " + std::to_string(e);
  std::fprintf(stderr,
               "experts: %d ranks, %lld tokens routed, max imbalance %.2f (layer %zu), "
               "replicated on every rank:%s\n",
               m.world_size, static_cast<long long>(routed), worst, worst_layer,
               replicated.empty() ? " none" : replicated.c_str());
}

}  // namespace

int run_run(const std::vector<std::string>& argv) {
  const Args args(argv, {"--config", "--prompts"}, {});
  const LaunchConfig config = load_launch_config(args.require("--config"));
  LazyTokenizer tokenizer(config.model);
  std::set<std::string> text_ids;  // requests whose output prints as text
  std::vector<Request> requests = read_prompts(args.require("--prompts"), tokenizer, text_ids);
  Engine engine(config);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, TokenStream>> streams;
  for (Request& r : requests) {
    std::string id = r.id;
    streams.emplace_back(id, engine.submit(std::move(r)));
  }
  int failed = 0;
  for (auto& [id, stream] : streams) {
    for (const TokenEvent& event : stream) {
      if (!event.finished) continue;
      std::printf("%s:", id.c_str());
      if (text_ids.count(id)) {
        const std::string text = tokenizer.get().decode(event.token_ids, true);
        std::printf(" %s", nlohmann::json(text).dump().c_str());
      } else {
        for (const int32_t token : event.token_ids) std::printf(" %d", token);
      }
      if (!event.error.empty()) ++failed;
      std::printf("  [%s%s%s]\n", std::string(finish_reason_name(event.reason())).c_str(),
                  event.error.empty() ? "" : ": ", event.error.c_str());
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const EngineMetrics m = engine.metrics();
  engine.shutdown();
  std::fflush(stdout);
  std::fprintf(
      stderr,
      "requests: %lld finished, %lld failed; %lld tokens in %lld steps, %.3f s "
      "(%.1f tokens/s); step %.3f s, compute %.3f s, actor overhead %.2f%%\n",
      static_cast<long long>(m.num_finished_requests),
      static_cast<long long>(m.num_failed_requests), static_cast<long long>(m.num_generated_tokens),
      static_cast<long long>(m.num_steps), seconds,
      static_cast<double>(m.num_generated_tokens) / seconds, m.step_seconds, m.compute_seconds,
      m.step_seconds > 0 ? 100.0 * (m.step_seconds - m.compute_seconds) / m.step_seconds : 0.0);
  const int tp = config.parallel.tensor_parallel_size;
  if (tp > 1) {
    // Every rank computes every expert's share: there is no per-rank load.
    std::fprintf(stderr, "tensor parallel: %d ranks\n", tp);
  } else if (m.num_experts > 0) {
    print_expert_load(m);
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace hive::cli
