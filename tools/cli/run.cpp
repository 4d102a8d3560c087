// hive run: a batch of prompts through the actor runtime, from a YAML launch
// file. Prompts are JSON lines: {"id": "a", "prompt_ids": [1, 2, 3],
// "max_tokens": 16, "temperature": 0, "top_k": 0, "top_p": 1, "seed": (random),
// "ignore_eos": false, "stop_token_ids": [], "priority": 0}, or with text
// instead of ids: {"prompt": "Once upon a time"} (tokenized with the model's
// tokenizer; "chat": true applies its chat template; "stop": ["\n\n"] ends
// its text before the first stop string). Every key but the
// prompt is optional; an unknown key, a value of the wrong type or range, or
// a repeated id is an error naming the file and line. The sampling keys and
// max_tokens left out take the checkpoint's generation_config.json values
// where it has them (max_new_tokens, cut to what the context leaves), else
// the defaults above. Outputs are ids for id
// prompts and a JSON string for text prompts.
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
#include "kernels/error.hpp"
#include "runtime/model/model_config.hpp"
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

// One prompt line's fields, type- and range-checked; errors name the line.
class PromptLine {
 public:
  PromptLine(const nlohmann::json& j, std::string where) : j_(j), where_(std::move(where)) {
    check(j.is_object(), where_, ": expected a JSON object (got ", j.dump(), ")");
    static const std::set<std::string> kKeys = {
        "id",    "prompt", "prompt_ids", "chat",       "max_tokens",     "temperature",
        "top_k", "top_p",  "seed",       "ignore_eos", "stop_token_ids", "priority", "stop"};
    for (const auto& [key, value] : j.items())
      check(kKeys.count(key), where_, ": unknown key \"", key,
            "\" (expected id, prompt or prompt_ids, chat, max_tokens, temperature, top_k, top_p, "
            "seed, ignore_eos, stop_token_ids, stop, priority)");
  }
  bool has(const char* key) const { return j_.contains(key); }
  int64_t integer(const char* key, int64_t fallback, int64_t min, int64_t max) const {
    if (!has(key)) return fallback;
    const nlohmann::json& v = j_.at(key);
    const bool fits = v.is_number_integer() &&
                      (!v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t(INT64_MAX));
    check(fits && v.get<int64_t>() >= min && v.get<int64_t>() <= max, where_, ": \"", key,
          "\" must be an integer in [", min, ", ", max, "] (got ", v.dump(), ")");
    return v.get<int64_t>();
  }
  double number(const char* key, double fallback, double min, double max) const {
    if (!has(key)) return fallback;
    const nlohmann::json& v = j_.at(key);
    check(v.is_number() && v.get<double>() >= min && v.get<double>() <= max, where_, ": \"", key,
          "\" must be a number in [", min, ", ", max, "] (got ", v.dump(), ")");
    return v.get<double>();
  }
  bool boolean(const char* key) const {
    if (!has(key)) return false;
    check(j_.at(key).is_boolean(), where_, ": \"", key, "\" must be true or false (got ",
          j_.at(key).dump(), ")");
    return j_.at(key).get<bool>();
  }
  std::string string(const char* key, std::string fallback) const {
    if (!has(key)) return fallback;
    check(j_.at(key).is_string(), where_, ": \"", key, "\" must be a string (got ",
          j_.at(key).dump(), ")");
    return j_.at(key).get<std::string>();
  }
  std::vector<std::string> strings(const char* key) const {
    std::vector<std::string> out;
    if (!has(key)) return out;
    const nlohmann::json& v = j_.at(key);
    check(v.is_array(), where_, ": \"", key, "\" must be an array of strings (got ", v.dump(), ")");
    for (const nlohmann::json& s : v) {
      check(s.is_string() && !s.get<std::string>().empty(), where_, ": \"", key, "\" holds ",
            s.dump(), ", not a non-empty string");
      out.push_back(s.get<std::string>());
    }
    return out;
  }
  std::vector<int32_t> ids(const char* key) const {
    std::vector<int32_t> ids;
    if (!has(key)) return ids;
    const nlohmann::json& v = j_.at(key);
    check(v.is_array(), where_, ": \"", key, "\" must be an array of token ids (got ", v.dump(),
          ")");
    for (const nlohmann::json& id : v) {
      check(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() <= INT32_MAX,
            where_, ": \"", key, "\" holds ", id.dump(),
            ", not a token id (a non-negative integer)");
      ids.push_back(id.get<int32_t>());
    }
    return ids;
  }

 private:
  const nlohmann::json& j_;
  std::string where_;
};

// text: the text parameters of requests with a text prompt;
// default_length_ids: requests whose max_tokens is a default (the engine may
// cut it to fit its KV pool).
std::vector<Request> read_prompts(const std::string& path, LazyTokenizer& tokenizer,
                                  const ModelConfig& model, std::map<std::string, TextParams>& text,
                                  std::set<std::string>& default_length_ids) {
  const int64_t vocab_size = model.vocab_size;
  const SamplingParams defaults = model.generation.sampling();
  for (const std::string& key : model.generation.ignored)
    std::fprintf(stderr, "note: generation_config.json sets %s, which Hive does not apply\n",
                 key.c_str());
  std::ifstream in(path);
  check(in.good(), "--prompts: cannot open ", path);
  std::vector<Request> requests;
  std::map<std::string, int> id_lines;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = str_cat(path, ":", number);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      fail(where, ": ", e.what());
    }
    const PromptLine p(j, where);
    Request r;
    r.id = p.string("id", "prompt-" + std::to_string(number));
    check(!r.id.empty(), where, ": \"id\" must not be empty");
    const auto [seen, fresh] = id_lines.emplace(r.id, number);
    check(fresh, where, ": id '", r.id, "' is already used on line ", seen->second);
    check(p.has("prompt") != p.has("prompt_ids"), where,
          ": give \"prompt\" (text) or \"prompt_ids\", not both or neither");
    check(p.has("prompt") || !p.has("chat"), where, ": \"chat\" applies to a text \"prompt\"");
    check(p.has("prompt") || !p.has("stop"), where,
          ": \"stop\" applies to a text \"prompt\" (stop strings are matched on the text)");
    if (p.has("prompt")) {
      r.prompt_token_ids = encode_prompt(tokenizer.get(), tokenizer.dir(), p.string("prompt", ""),
                                         p.boolean("chat"));
      text[r.id] = TextParams{p.strings("stop"), {}, true};
    } else {
      r.prompt_token_ids = p.ids("prompt_ids");
    }
    check(!r.prompt_token_ids.empty(), where, ": the prompt has no tokens");
    for (const int32_t id : r.prompt_token_ids)
      check(id < vocab_size, where, ": prompt token id ", id, " is out of range [0, ", vocab_size,
            ")");
    // A default, unlike a value given, never asks for more than the context holds.
    const auto prompt_len = static_cast<int64_t>(r.prompt_token_ids.size());
    const int64_t room = model.max_position_embeddings > 0
                             ? model.max_position_embeddings - prompt_len
                             : int64_t{INT32_MAX};
    check(room >= 1, where, ": the prompt (", prompt_len,
          " tokens) leaves no room in the model's context of ", model.max_position_embeddings,
          " tokens");
    if (!p.has("max_tokens")) default_length_ids.insert(r.id);
    r.stop.max_tokens =
        p.integer("max_tokens", std::min(model.generation.max_tokens_or(16), room), 1, INT32_MAX);
    r.stop.ignore_eos = p.boolean("ignore_eos");
    r.stop.stop_token_ids = p.ids("stop_token_ids");
    r.sampling.temperature =
        static_cast<float>(p.number("temperature", defaults.temperature, 0.0, 1e6));
    r.sampling.top_k = static_cast<int>(p.integer("top_k", defaults.top_k, 0, INT32_MAX));
    r.sampling.top_p = static_cast<float>(p.number("top_p", defaults.top_p, 0.0, 1.0));
    if (p.has("seed")) r.sampling.seed = static_cast<uint64_t>(p.integer("seed", 0, 0, INT64_MAX));
    r.priority = static_cast<int>(p.integer("priority", 0, INT32_MIN, INT32_MAX));
    try {
      validate(r.sampling);
    } catch (const Error& e) {
      fail(where, ": ", e.what());
    }
    requests.push_back(std::move(r));
  }
  check(!requests.empty(), path, ": no prompts");
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
}

}  // namespace

int run_run(const std::vector<std::string>& argv) {
  const Args args(argv, {"--config", "--prompts"}, {});
  const LaunchConfig config = load_launch_config(args.require("--config"));
  LazyTokenizer tokenizer(config.model);
  std::map<std::string, TextParams> text;
  std::set<std::string> default_length_ids;
  std::vector<Request> requests =
      read_prompts(args.require("--prompts"), tokenizer, load_model_config(config.model), text,
                   default_length_ids);
  std::optional<OutputProcessor> processor;
  if (!text.empty()) processor.emplace(tokenizer.get());
  if (!config.speculative.draft_model.empty())
    std::fprintf(stderr,
                 "note: the config's speculative section is not used yet; running without a "
                 "draft model\n");
  Engine engine(config);
  // A default max_tokens is cut to what a rank's KV pool leaves too.
  for (Request& r : requests)
    if (default_length_ids.count(r.id))
      r.stop.max_tokens = std::clamp<int64_t>(
          engine.max_sequence_tokens() - static_cast<int64_t>(r.prompt_token_ids.size()), 1,
          r.stop.max_tokens);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, TokenStream>> streams;
  for (Request& r : requests) {
    std::string id = r.id;
    if (text.count(id)) processor->add_request(id, r.n, r.prompt_token_ids, text.at(id));
    streams.emplace_back(id, engine.submit(std::move(r)));
  }
  int failed = 0;
  for (auto& [id, stream] : streams) {
    const bool is_text = text.count(id) > 0;
    for (const TokenEvent& event : stream) {
      if (!event.finished) {
        // A text request's tokens go through the output processor as they
        // come; a stop string ends the request there.
        for (const int32_t token : is_text ? event.token_ids : std::vector<int32_t>{})
          if (processor->add_token(id, event.sample_index, token).stopped_by_string)
            engine.cancel(id);
        continue;
      }
      std::printf("%s:", id.c_str());
      FinishReason reason = event.reason();
      if (is_text) {
        // A failure of the whole request names sample -1; hive run's requests have one.
        const OutputProcessor::Final final = processor->finish(id, std::max(event.sample_index, 0));
        if (final.stopped_by_string) reason = FinishReason::stop_string;
        std::printf(" %s", nlohmann::json(final.full_text).dump().c_str());
      } else {
        for (const int32_t token : event.token_ids) std::printf(" %d", token);
      }
      if (!event.error.empty()) ++failed;
      std::printf("  [%s%s%s]\n", std::string(finish_reason_name(reason)).c_str(),
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
