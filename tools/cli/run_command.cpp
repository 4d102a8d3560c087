// hive run: a batch of prompts through the actor runtime, from a YAML launch
// file. Prompts are JSON lines: {"id": "a", "prompt_ids": [1, 2, 3],
// "max_tokens": 16, "temperature": 0, "top_k": 0, "top_p": 1, "min_p": 0,
// "presence_penalty": 0, "frequency_penalty": 0, "repetition_penalty": 1,
// "logprobs": (none; 0..20 top alternatives), "seed": (random),
// "ignore_eos": false, "stop_token_ids": [], "priority": 0}, or with text
// instead of ids: {"prompt": "Once upon a time"} (tokenized with the model's
// tokenizer; "chat": true applies its chat template; "stop": ["\n\n"] ends
// its text before the first stop string). Every key but the
// prompt is optional; an unknown key, a value of the wrong type or range, or
// a repeated id is an error naming the file and line. The sampling keys and
// max_tokens left out take the checkpoint's generation_config.json values
// where it has them (max_new_tokens, cut to what the context leaves), else
// the defaults above. Outputs are ids for id
// prompts and a JSON string for text prompts; a prompt with "logprobs" adds
// a JSON line on stderr (tools/cli/logprobs_json.hpp).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "actors/engine.hpp"
#include "base/error.hpp"
#include "base/json_writer.hpp"
#include "runtime/engine/input_processor.hpp"
#include "runtime/loader/model_config.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/config_flags.hpp"
#include "tools/cli/logprobs_json.hpp"
#include "tools/cli/matmul_precision.hpp"
#include "tools/cli/output.hpp"
#include "tools/cli/process_ranks.hpp"
#include "tools/cli/progress.hpp"
#include "tools/cli/prompt_file.hpp"

namespace hive::cli {

namespace {

// The input processor's requests, errors named by their line.
std::vector<ProcessedRequest> process(InputProcessor& inputs,
                                      const std::vector<PromptInput>& prompts) {
  std::vector<ProcessedRequest> requests;
  for (const PromptInput& p : prompts) {
    try {
      requests.push_back(inputs.process(p.input));
    } catch (const InputError& e) {
      fail(p.where, ": ", e.what());
    }
  }
  return requests;
}

// Expert load over the run: how even the routing was, how much of it crossed
// ranks, and what was replicated.
void print_expert_load(const EngineMetrics& m) {
  double worst = 0;
  size_t worst_layer = 0;
  int64_t routed = 0, remote = 0;
  for (size_t l = 0; l < m.expert_imbalance.size(); ++l)
    if (m.expert_imbalance[l] > worst) worst = m.expert_imbalance[l], worst_layer = l;
  for (const int64_t n : m.expert_load) routed += n;
  for (const int64_t n : m.expert_remote) remote += n;
  std::string replicated;
  for (const int32_t e : m.replicated_experts) replicated += " " + std::to_string(e);
  std::fprintf(stderr,
               "experts: %d ranks, %lld tokens routed (%lld to another rank), max imbalance "
               "%.2f (layer %zu), replicated on every rank:%s\n",
               m.world_size, static_cast<long long>(routed), static_cast<long long>(remote), worst,
               worst_layer, replicated.empty() ? " none" : replicated.c_str());
  if (m.expert_replans > 0)
    std::fprintf(stderr, "experts: live balancing switched placement %lld times\n",
                 static_cast<long long>(m.expert_replans));
}

}  // namespace

int run_run(const std::vector<std::string>& argv) {
  std::set<std::string> valued = config_value_flags(false), switches = config_switches();
  valued.insert({"--config", "--prompts"});
  switches.insert("--print-config");
  const Args args(argv, valued, switches);
  args.require("--config");
  check(!args.has("--model"),
        "give --model or --config, not both (the launch file names its model)");
  HiveConfig config = config_from_args(args, HiveConfig{});
  if (args.has("--print-config")) {
    print_resolved_config(config);
    return 0;
  }
  apply_matmul_precision(args, config.matmul_precision);
  const ProcessRanks ranks = start_process_ranks(config);
  if (ranks.served_worker) return 0;
  const std::vector<PromptInput> prompts =
      read_prompt_file(args.require("--prompts"), kRunPromptKeys);
  // Every rule is the input processor's; checked before the engine starts,
  // then again once it has: a default max_tokens is cut to what a rank's KV
  // pool leaves too.
  InputLimits limits;
  limits.max_n = config.engine.scheduler.max_num_seqs;
  InputProcessor inputs(config.model, load_model_config(config.model), limits);
  for (const std::string& key : inputs.ignored_generation_keys())
    std::fprintf(stderr, "note: generation_config.json sets %s, which Hive does not apply\n",
                 key.c_str());
  process(inputs, prompts);
  Progress loading = Progress::on_stderr("loading " + config.model.string());
  Engine engine(config);
  loading.done();
  report_compute("hive run", engine.device_note());
  limits.max_sequence_tokens = engine.max_sequence_tokens();
  inputs.set_limits(limits);
  const std::vector<ProcessedRequest> requests = process(inputs, prompts);
  std::optional<OutputProcessor> processor;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, TokenStream>> streams;
  std::set<std::string> text_ids;
  for (const ProcessedRequest& r : requests) {
    const std::string& id = r.request.id;
    if (r.text_output) {
      if (!processor) processor.emplace(inputs.tokenizer());
      processor->add_request(id, r.request.n, r.request.prompt_token_ids, r.text);
      text_ids.insert(id);
    }
    streams.emplace_back(id, engine.submit(r.request));
  }
  // Counted here, from each request's terminal event: the engine's metrics
  // leave out requests refused at submission (an engine that stopped
  // serving aborts them there).
  int64_t finished = 0, failed = 0;
  for (auto& [id, stream] : streams) {
    const bool is_text = text_ids.count(id) > 0;
    for (const TokenEvent& event : stream) {
      if (!event.finished) {
        // A text request's tokens go through the output processor as they
        // come; a stop string ends the request there.
        for (const int32_t token : is_text ? event.token_ids : std::vector<int32_t>{})
          if (processor->add_token(id, event.sample_index, token).stopped_by_string)
            engine.stop_sample(id, event.sample_index);
        continue;
      }
      std::printf("%s:", id.c_str());
      FinishReason reason = event.reason();
      if (is_text) {
        // A failure of the whole request names sample -1; hive run's requests have one.
        const OutputProcessor::Final final = processor->finish(id, std::max(event.sample_index, 0));
        if (final.stopped_by_string) reason = FinishReason::stop_string;
        std::printf(" %s", json_text(nlohmann::json(final.full_text)).c_str());
      } else {
        for (const int32_t token : event.token_ids) std::printf(" %d", token);
      }
      ++(event.error.empty() ? finished : failed);
      std::printf("  [%s%s%s]\n", std::string(finish_reason_name(reason)).c_str(),
                  event.error.empty() ? "" : ": ", event.error.c_str());
      if (!event.logprobs.empty()) print_logprobs(id, event.token_ids, event.logprobs);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const EngineMetrics m = engine.metrics();
  engine.shutdown();
  flush_stdout();
  std::fprintf(
      stderr,
      "requests: %lld finished, %lld failed; %lld tokens in %lld steps, %.3f s "
      "(%.1f tokens/s); step %.3f s, compute %.3f s, actor overhead %.2f%%\n",
      static_cast<long long>(finished), static_cast<long long>(failed),
      static_cast<long long>(m.num_generated_tokens), static_cast<long long>(m.num_steps), seconds,
      static_cast<double>(m.num_generated_tokens) / seconds, m.step_seconds, m.compute_seconds,
      m.step_seconds > 0 ? 100.0 * (m.step_seconds - m.compute_seconds) / m.step_seconds : 0.0);
  if (m.spec_num_drafts > 0)
    std::fprintf(stderr,
                 "speculation: %lld of %lld draft tokens accepted (%.1f%%), %.2f tokens per "
                 "verifying step\n",
                 static_cast<long long>(m.spec_num_accepted_tokens),
                 static_cast<long long>(m.spec_num_draft_tokens),
                 100.0 * static_cast<double>(m.spec_num_accepted_tokens) /
                     static_cast<double>(m.spec_num_draft_tokens),
                 1.0 + static_cast<double>(m.spec_num_accepted_tokens) /
                           static_cast<double>(m.spec_num_drafts));
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
