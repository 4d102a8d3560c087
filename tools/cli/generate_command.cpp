// hive generate: text or token ids in, the same out, with throughput.
// Text prompts are positional arguments (with --chat, each becomes the user
// turn of the model's chat template); id prompts come from --prompt-ids
// (repeatable) or --prompts-file (one comma-separated id list per line). One
// prompt streams its output as it comes; several run together through the
// offline engine, one output line per prompt in input order (text as a JSON
// string, since it may hold newlines). --logprobs N adds one JSON line per
// prompt on stderr (tools/cli/logprobs_json.hpp).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "base/error.hpp"
#include "kernels/backend_select.hpp"
#include "runtime/engine/generate.hpp"
#include "runtime/engine/input_processor.hpp"
#include "runtime/engine/llm_engine.hpp"
#include "runtime/loader/model_config.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/logprobs_json.hpp"
#include "tools/cli/matmul_precision.hpp"
#include "tools/cli/output.hpp"
#include "tools/cli/progress.hpp"
#include "tools/cli/text_prompt.hpp"
#include "base/json_writer.hpp"

namespace hive::cli {

namespace {

// Args keeps one value per flag, so the values of `flag`, which may repeat,
// are taken out first.
std::vector<std::string> take_repeated(const std::vector<std::string>& argv,
                                       const std::string& flag, std::vector<std::string>& values) {
  std::vector<std::string> rest;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--") {  // the rest is positional
      rest.insert(rest.end(), argv.begin() + static_cast<std::ptrdiff_t>(i), argv.end());
      break;
    }
    if (argv[i] == flag) {
      check(i + 1 < argv.size(), flag, " needs a value");
      values.push_back(argv[++i]);
    } else if (argv[i].rfind(flag + "=", 0) == 0) {
      values.push_back(argv[i].substr(flag.size() + 1));
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

void print_spec_stats(const SpecDecodeStats& spec) {
  if (spec.num_drafts == 0) return;
  std::fprintf(stderr,
               "speculation: %lld of %lld draft tokens accepted (%.1f%%), %.2f tokens per "
               "verifying step\n",
               static_cast<long long>(spec.num_accepted_tokens),
               static_cast<long long>(spec.num_draft_tokens), 100.0 * spec.acceptance_rate(),
               spec.mean_accepted_length());
}

// One prompt, streamed: on_token prints each token as it comes, finish ends
// the output line.
int generate_one(Model& model, const std::vector<int32_t>& prompt, const GenerateOptions& options,
                 const std::function<bool(int32_t)>& on_token,
                 const std::function<void()>& finish) {
  const GenerateResult result = generate(model, prompt, options, on_token);
  finish();
  flush_stdout();  // the output first, then logprobs and the stats on stderr
  if (options.sampling.logprobs) print_logprobs("prompt 1", result.tokens, result.logprobs);
  const auto decoded = static_cast<double>(result.tokens.size() - 1);
  std::fprintf(stderr, "prefill: %zu tokens in %.3f s (%.1f tokens/s)\n", prompt.size(),
               result.prefill_seconds, static_cast<double>(prompt.size()) / result.prefill_seconds);
  if (decoded > 0)
    std::fprintf(stderr, "decode: %.0f tokens in %.3f s (%.1f tokens/s)%s\n", decoded,
                 result.decode_seconds, decoded / result.decode_seconds,
                 result.finish_reason == FinishReason::eos           ? ", stopped at EOS"
                 : result.finish_reason == FinishReason::stop_string ? ", stopped at a stop string"
                                                                     : "");
  print_spec_stats(result.spec_decode);
  return 0;
}

constexpr int64_t kMaxMiB = int64_t{1} << 30;  // 1 PiB: the shift below cannot overflow
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// The offline engine's settings: they apply to several prompts. One prompt
// runs alone with a KV cache sized to fit it, so they would do nothing there.
const std::vector<std::string> kEngineFlags = {
    "--block-size", "--kv-budget-mb", "--swap-space-mb", "--max-num-seqs",
    "--max-num-batched-tokens", "--enable-prefix-caching"};

// --speculative ngram, or --draft-model DIR; --num-speculative-tokens N.
SpeculativeConfig speculative_config(const Args& args) {
  SpeculativeConfig spec;
  if (args.has("--speculative")) {
    const std::string method = args.get("--speculative", "");
    check(method == "ngram" || method == "draft_model", "--speculative: expected ngram or "
          "draft_model (got '", method, "')");
    spec.method = *parse_speculative_method(method);
  }
  if (args.has("--draft-model")) {
    check(spec.method != SpeculativeMethod::ngram,
          "--draft-model and --speculative ngram are two ways to draft; give one");
    spec.method = SpeculativeMethod::draft_model;
    spec.draft_model = args.get("--draft-model", "");
  }
  check(spec.method != SpeculativeMethod::draft_model || !spec.draft_model.empty(),
        "--speculative draft_model needs --draft-model DIR");
  check(spec.enabled() || !args.has("--num-speculative-tokens"),
        "--num-speculative-tokens needs --speculative ngram or --draft-model DIR");
  if (spec.enabled())
    spec.num_speculative_tokens = static_cast<int>(args.get_int(
        "--num-speculative-tokens", spec.num_speculative_tokens, 1, kMaxSpeculativeTokens));
  return spec;
}

EngineConfig engine_config(const Args& args) {
  EngineConfig config;
  config.speculative = speculative_config(args);
  // Unset flags leave the tree's defaults (runtime/engine/engine_config.hpp).
  config.block_size =
      static_cast<int32_t>(args.get_int("--block-size", config.block_size, 1, 1 << 16));
  // Without --kv-budget-mb: the engine's default, a share of the free memory.
  if (args.has("--kv-budget-mb"))
    config.kv_budget.bytes = args.get_int("--kv-budget-mb", 0, 1, kMaxMiB) << 20;
  config.swap_space_bytes = args.get_int("--swap-space-mb", 0, 0, kMaxMiB) << 20;
  // Each prompt runs once: prefix caching only when asked for.
  config.enable_prefix_caching = args.has("--enable-prefix-caching");
  if (args.has("--kv-cache-dtype"))
    config.kv_cache_dtype =
        parse_kv_cache_dtype(args.get("--kv-cache-dtype", ""), "--kv-cache-dtype");
  SchedulerConfig& s = config.scheduler;
  s.max_num_seqs = args.get_int("--max-num-seqs", s.max_num_seqs, 1, kInt32Max);
  s.max_num_batched_tokens =
      args.get_int("--max-num-batched-tokens", s.max_num_batched_tokens, 1, kInt32Max);
  return config;
}

// The flag that sets a sampling field of a request, or "".
std::string flag_of(const std::string& field) {
  // The sampling fields; max_tokens' errors are about the prompt too.
  static const std::set<std::string> kFlagFields = {
      "temperature",        "top_k",   "top_p", "min_p", "presence_penalty", "frequency_penalty",
      "repetition_penalty", "logprobs"};
  if (!kFlagFields.count(field)) return "";
  std::string flag = "--" + field;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

// The input processor's errors, named by the prompt they are about and the
// flag that set the value.
ProcessedRequest process(InputProcessor& inputs, const RequestInput& input) {
  try {
    return inputs.process(input);
  } catch (const InputError& e) {
    const std::string flag = flag_of(e.field());
    fail(input.id, ": ", flag.empty() ? "" : flag + ": ", e.what());
  }
}

// Steps the engine to the end; with an output processor, each new token goes
// through it as it comes, and a sample whose text met a stop string ends
// there. Returns the requests' outputs, by id.
std::map<std::string, RequestOutput> run_engine(LLMEngine& engine, OutputProcessor* processor) {
  std::map<std::string, RequestOutput> done;
  while (engine.has_unfinished()) {
    std::vector<SequenceOutput> finished = engine.step();
    if (processor) {
      for (const NewToken& token : engine.last_tokens()) {
        if (processor->add_token(token.request_id, token.sample_index, token.token)
                .stopped_by_string)
          engine.abort_request(token.request_id, FinishReason::stop_string, token.sample_index);
      }
    }
    for (SequenceOutput& out : finished) {
      RequestOutput& request = done[out.request_id];
      request.request_id = out.request_id;
      request.samples.push_back(std::move(out));
    }
  }
  return done;
}

// Several prompts, batched through the offline engine. Their requests are
// processed again once the engine exists: a default max_tokens is cut to
// what a sequence's share of its KV pool leaves too.
int generate_many(Model& model, InputProcessor& inputs, const std::vector<RequestInput>& prompts,
                  const EngineConfig& config) {
  LLMEngine engine(model, config);
  InputLimits limits = inputs.limits();
  limits.max_sequence_tokens = engine.max_sequence_tokens();
  inputs.set_limits(limits);
  std::vector<ProcessedRequest> requests;
  for (const RequestInput& input : prompts) requests.push_back(process(inputs, input));
  std::optional<OutputProcessor> processor;
  int64_t prompt_tokens = 0;
  for (const ProcessedRequest& r : requests) {
    if (r.text_output && !processor) processor.emplace(inputs.tokenizer());
    if (r.text_output)
      processor->add_request(r.request.id, r.request.n, r.request.prompt_token_ids, r.text);
    prompt_tokens += static_cast<int64_t>(r.request.prompt_token_ids.size());
  }
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (const ProcessedRequest& r : requests) engine.add_request(r.request);
  std::map<std::string, RequestOutput> done = run_engine(engine, processor ? &*processor : nullptr);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  int64_t generated = 0;
  int failed = 0;
  for (const ProcessedRequest& r : requests) {
    const std::string& id = r.request.id;
    const SequenceOutput& out = done.at(id).samples.at(0);
    if (!out.error.empty()) {
      std::fprintf(stderr, "hive: %s failed: %s\n", id.c_str(), out.error.c_str());
      ++failed;
    }
    if (r.text_output) {
      const std::string text = processor->finish(id, 0).full_text;
      std::printf("%s\n", json_text(nlohmann::json(text)).c_str());
    } else {
      for (const int32_t token : out.token_ids) std::printf("%d ", token);
      std::printf("\n");
    }
    generated += static_cast<int64_t>(out.token_ids.size());
  }
  flush_stdout();
  for (const ProcessedRequest& r : requests) {
    const SequenceOutput& out = done.at(r.request.id).samples.at(0);
    if (r.request.sampling.logprobs) print_logprobs(r.request.id, out.token_ids, out.logprobs);
  }
  const EngineStats stats = engine.stats();
  std::fprintf(stderr,
               "%zu requests: %lld prompt + %lld generated tokens in %.3f s (prompt %.1f "
               "tokens/s, generated %.1f tokens/s), %lld steps, up to %lld running\n",
               requests.size(), static_cast<long long>(prompt_tokens),
               static_cast<long long>(generated), seconds,
               static_cast<double>(prompt_tokens) / seconds,
               static_cast<double>(generated) / seconds,
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
  print_spec_stats(stats.scheduler.spec_decode);
  return failed == 0 ? 0 : 1;
}

}  // namespace

int run_generate(const std::vector<std::string>& argv) {
  std::vector<std::string> prompt_flags, stop_strings;
  const Args args(take_repeated(take_repeated(argv, "--prompt-ids", prompt_flags), "--stop",
                                stop_strings),
                  {"--model", "--prompts-file", "--max-tokens", "--temperature", "--top-k",
                   "--top-p", "--min-p", "--presence-penalty", "--frequency-penalty",
                   "--repetition-penalty", "--logprobs", "--seed", "--device", "--block-size",
                   "--max-num-seqs", "--max-num-batched-tokens", "--kv-budget-mb",
                   "--swap-space-mb", "--kv-cache-dtype", "--speculative", "--draft-model",
                   "--num-speculative-tokens", "--matmul-precision"},
                  {"--ignore-eos", "--enable-prefix-caching", "--chat", "--dequantize"},
                  Args::Positional::allowed);
  const std::vector<std::string>& texts = args.positional();
  const bool text_mode = !texts.empty();
  check(!text_mode || (prompt_flags.empty() && !args.has("--prompts-file")),
        "give text prompts or --prompt-ids/--prompts-file, not both");
  check(text_mode || !args.has("--chat"),
        "--chat needs a text prompt (hive generate --chat \"...\")");
  check(text_mode || stop_strings.empty(),
        "--stop needs a text prompt (stop strings are matched on the text)");
  for (const std::string& stop : stop_strings) check(!stop.empty(), "--stop must not be empty");
  const std::string model_dir = model_dir_or_default(args);
  apply_matmul_precision(args);

  // The request every prompt shares; flags left out stay unset, for the
  // input processor to fill in from generation_config.json.
  RequestInput shared;
  if (args.has("--max-tokens")) shared.max_tokens = args.get_int("--max-tokens", 0, 1, kInt32Max);
  if (args.has("--temperature")) shared.temperature = args.get_double("--temperature", 0);
  if (args.has("--top-k")) shared.top_k = args.get_int("--top-k", 0, 0, kInt32Max);
  if (args.has("--top-p")) shared.top_p = args.get_double("--top-p", 1);
  if (args.has("--min-p")) shared.min_p = args.get_double("--min-p", 0);
  if (args.has("--presence-penalty"))
    shared.presence_penalty = args.get_double("--presence-penalty", 0);
  if (args.has("--frequency-penalty"))
    shared.frequency_penalty = args.get_double("--frequency-penalty", 0);
  if (args.has("--repetition-penalty"))
    shared.repetition_penalty = args.get_double("--repetition-penalty", 1);
  if (args.has("--logprobs")) shared.logprobs = args.get_int("--logprobs", 0, 0, kMaxLogprobs);
  if (args.has("--seed")) shared.seed = static_cast<uint64_t>(args.get_int("--seed", 0, 0));
  shared.ignore_eos = args.has("--ignore-eos");
  shared.stop = stop_strings;
  std::vector<RequestInput> prompts;
  const auto add_prompt = [&](Prompt prompt) {
    RequestInput input = shared;
    input.id = str_cat("prompt ", prompts.size() + 1);  // as the CLI's errors count them
    input.prompt = std::move(prompt);
    prompts.push_back(std::move(input));
  };
  for (const std::string& text : texts) {
    if (args.has("--chat"))
      add_prompt(std::vector<ChatMessage>{{"user", text}});
    else
      add_prompt(text);
  }
  for (const std::string& ids : prompt_flags) add_prompt(parse_id_list(ids, "--prompt-ids"));
  if (args.has("--prompts-file")) {
    for (auto& p : read_prompts_file(args.get("--prompts-file", ""))) add_prompt(std::move(p));
  }
  check(!prompts.empty(),
        "nothing to generate from: give a text prompt (hive generate \"Once upon a time\"), "
        "--prompt-ids or --prompts-file");
  if (prompts.size() == 1)
    for (const std::string& flag : kEngineFlags)
      check(!args.has(flag), flag,
            " applies to several prompts; one prompt runs alone with a KV cache sized to fit it");
  const EngineConfig config = engine_config(args);

  // Every rule is the input processor's; here, before the model loads, so
  // that a bad request fails at once. One prompt gets a KV cache that fits
  // it, so only the context limits it.
  InputLimits limits;
  limits.default_max_tokens = 16;
  limits.default_max_tokens_text = 64;
  limits.default_max_tokens_chat = 64;
  limits.max_n = config.scheduler.max_num_seqs;
  InputProcessor inputs(model_dir, load_model_config(model_dir), limits);
  for (const std::string& key : inputs.ignored_generation_keys())
    std::fprintf(stderr, "note: generation_config.json sets %s, which Hive does not apply\n",
                 key.c_str());
  std::vector<ProcessedRequest> requests;
  for (const RequestInput& input : prompts) requests.push_back(process(inputs, input));
  // A sampled run without --seed draws one and says which, so that a good
  // sample can be had again.
  if (!shared.seed && requests[0].request.sampling.temperature > 0) {
    const uint64_t seed = random_seed() >> 1;  // --seed takes a non-negative int64
    std::fprintf(stderr, "seed: %llu (--seed %llu repeats this sample)\n",
                 static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
    for (ProcessedRequest& r : requests) r.request.sampling.seed = seed;
    for (RequestInput& input : prompts) input.seed = seed;
  }

  BackendChoice choice = select_backend(parse_device_choice(args.get("--device", "auto"), "--device"),
                                        Model::required_ops());
  if (!choice.note.empty()) std::fprintf(stderr, "%s\n", choice.note.c_str());
  Progress loading = Progress::on_stderr("loading " + model_dir);
  Model model(model_dir, *choice.backend, LoadOptions{.dequantize = args.has("--dequantize")});
  loading.done();
  if (prompts.size() > 1) return generate_many(model, inputs, prompts, config);

  const Request& request = requests[0].request;
  GenerateOptions options;
  options.max_tokens = request.stop.max_tokens;
  options.sampling = request.sampling;
  options.ignore_eos = request.stop.ignore_eos;
  options.block_size = config.block_size;
  options.kv_cache_dtype = config.kv_cache_dtype;
  options.speculative = config.speculative;
  const std::vector<int32_t>& prompt = request.prompt_token_ids;
  if (!requests[0].text_output) {
    return generate_one(
        model, prompt, options,
        [](int32_t token) {
          std::printf("%d ", token);
          flush_stdout();
          return true;
        },
        [] { std::printf("\n"); });
  }
  // A plain prompt is echoed so the continuation reads on from it; a chat
  // prompt is not (the template's markup is not the user's text).
  if (!args.has("--chat")) {
    std::fputs(texts[0].c_str(), stdout);
    flush_stdout();
  }
  TextStream stream(inputs.tokenizer(), prompt, stdout, requests[0].text);
  return generate_one(
      model, prompt, options, [&](int32_t token) { return stream.write(token); },
      [&] { stream.finish(); });
}

}  // namespace hive::cli
