// Speculative decoding against plain decoding, on the same engine, prompts
// and weights, in one run.
//
//   bench_speculative --model DIR --draft DIR [--max-tokens T] [--gamma G]
//                     [--batches 1,16] [--rounds R] [--engine actor|offline]
//                     [--modes off,draft,...] [--prompts default|repetitive]
//                     [--json FILE]
//
// For each batch size B: B text prompts (a fixed list, cycled; or with
// --prompts repetitive, passages said three times), greedy, T
// tokens each (end-of-sequence ignored), all submitted at once to an
// engine with max_num_seqs B: hive::Engine (actor, the default: the draft
// model runs in the draft actor, a window ahead) or the offline LLMEngine
// (the draft runs inline, between steps). Modes: off, draft (the draft model
// proposes up to G tokens), ngram (prompt lookup, up to G tokens), each with
// the load-aware control and, as draft-fixed and ngram-fixed, without it
// (always G when there is a draft). The rounds alternate the modes; each
// mode's time is the median. Every mode must give off's tokens (greedy is
// exact), or the program fails. Reported per batch and mode: generated
// tokens/s, the ratio to off (of the medians, and "paired": the median over
// rounds of each round's ratio, which a machine's drift between rounds
// moves less), the acceptance rate α, the tokens a verifying
// step adds per sequence, and next to it the formula (1 - α^(γ+1)) / (1 - α)
// for independent acceptances at the mean draft length γ.
#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/engine.hpp"
#include "base/error.hpp"
#include "kernels/backend_select.hpp"
#include "runtime/engine/llm_engine.hpp"
#include "runtime/engine/step_cost_probe.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "tools/cli/args.hpp"

namespace {

using Clock = std::chrono::steady_clock;

const std::vector<std::string> kPrompts = {
    "Once upon a time",
    "The king of Israel said",
    "In the beginning",
    "The little cat sat on the mat and",
    "And the LORD spake unto Moses, saying,",
    "There was a man in the land",
    "The old man and the sea",
    "Tell me a story about a dragon.",
};

// --prompts repetitive: text that says the same thing twice, the case
// prompt lookup is for (editing, quoting, code): a model continuing it
// tends to repeat it again, which the n-gram drafter can copy.
const std::vector<std::string> kRepetitivePrompts = [] {
  const std::vector<std::string> passages = {
      "And the LORD spake unto Moses, saying, Speak unto the children of Israel, and say unto "
      "them, ",
      "Once upon a time there was a little cat who sat on the mat and looked at the sea. ",
      "In the beginning God created the heaven and the earth. And the earth was without form. ",
      "The old man went down to the sea in the morning, and he took his boat and his nets. ",
  };
  std::vector<std::string> prompts;
  for (const std::string& p : passages) prompts.push_back(p + p + p);
  return prompts;
}();

struct Mode {
  std::string name;
  hive::SpeculativeConfig speculative;
};

struct Result {
  std::vector<double> seconds;
  int64_t generated = 0;
  hive::SpecDecodeStats spec;
  std::vector<std::vector<int32_t>> outputs;
  int64_t proposed_ahead = 0, used_ahead = 0;  // the draft actor's windows
};

Result run_once(hive::Model& model, const Mode& mode, const std::vector<hive::Request>& requests,
                int batch) {
  hive::EngineConfig config;
  // Off: the rows repeat their prompts, and each must compute them.
  config.enable_prefix_caching = false;
  config.scheduler.max_num_seqs = batch;
  config.speculative = mode.speculative;
  hive::LLMEngine engine(model, config);
  const auto start = Clock::now();
  const std::vector<hive::RequestOutput> outputs = engine.generate(requests);
  Result r;
  r.seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  for (const hive::RequestOutput& out : outputs) {
    r.outputs.push_back(out.samples.at(0).token_ids);
    r.generated += static_cast<int64_t>(out.samples.at(0).token_ids.size());
  }
  r.spec = engine.stats().scheduler.spec_decode;
  return r;
}

// The same through hive::Engine; the clock starts once its workers are up.
Result run_actor(const std::string& model_dir, const Mode& mode,
                 const std::vector<hive::Request>& requests, int batch) {
  hive::HiveConfig options;
  options.model = model_dir;
  options.device = hive::DeviceChoice::cpu;
  options.engine.scheduler.max_num_seqs = batch;
  options.engine.speculative = mode.speculative;
  hive::Engine engine(options);
  while (!engine.metrics().ready) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const auto start = Clock::now();
  std::vector<hive::TokenStream> streams;
  for (const hive::Request& request : requests) streams.push_back(engine.submit(request));
  Result r;
  for (hive::TokenStream& stream : streams)
    for (const hive::TokenEvent& e : stream) {
      hive::check(e.error.empty(), "request ", e.request_id, ": ", e.error);
      if (e.finished) r.outputs.push_back(e.token_ids);
    }
  r.seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  for (const auto& out : r.outputs) r.generated += static_cast<int64_t>(out.size());
  const hive::EngineMetrics m = engine.metrics();
  r.spec.num_drafts = m.spec_num_drafts;
  r.spec.num_draft_tokens = m.spec_num_draft_tokens;
  r.spec.num_accepted_tokens = m.spec_num_accepted_tokens;
  r.spec.drafts_per_position = m.spec_drafts_per_position;
  r.spec.accepted_per_position = m.spec_accepted_per_position;
  r.proposed_ahead = m.spec_proposed_ahead;
  r.used_ahead = m.spec_used_ahead;
  engine.shutdown(hive::ShutdownMode::drain);
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const hive::cli::Args args(
        std::vector<std::string>(argv + 1, argv + argc),
        {"--model", "--draft", "--max-tokens", "--gamma", "--batches", "--rounds", "--engine",
         "--modes", "--prompts", "--json"},
        {});
    const std::string model_dir = args.require("--model");
    const std::string draft_dir = args.require("--draft");
    const int64_t max_tokens = args.get_int("--max-tokens", 128, 1);
    const auto gamma = static_cast<int>(args.get_int("--gamma", 4, 1, hive::kMaxSpeculativeTokens));
    const auto rounds = static_cast<int>(args.get_int("--rounds", 3, 1, 1000));
    const std::string engine_kind = args.get("--engine", "actor");
    const std::string prompt_set = args.get("--prompts", "default");
    hive::check(prompt_set == "default" || prompt_set == "repetitive",
                "--prompts: expected default or repetitive (got '", prompt_set, "')");
    const std::vector<std::string>& prompts =
        prompt_set == "repetitive" ? kRepetitivePrompts : kPrompts;
    hive::check(engine_kind == "actor" || engine_kind == "offline",
                "--engine: expected actor or offline (got '", engine_kind, "')");
    std::vector<int> batches;
    std::stringstream list(args.get("--batches", "1,16"));
    for (std::string item; std::getline(list, item, ',');) batches.push_back(std::stoi(item));

    hive::BackendChoice choice = hive::select_backend(hive::DeviceChoice::cpu, hive::Model::required_ops());
    hive::Model model(model_dir, *choice.backend);
    const hive::Tokenizer tokenizer = hive::Tokenizer::from_directory(model_dir);
    std::vector<Mode> modes(5);
    modes[0].name = "off";
    modes[1].name = "draft";
    modes[1].speculative = {hive::SpeculativeMethod::draft_model, gamma, {}, draft_dir};
    modes[2].name = "ngram";
    modes[2].speculative = {hive::SpeculativeMethod::ngram, gamma, {}, {}};
    modes[3] = modes[1];
    modes[3].name = "draft-fixed";
    modes[3].speculative.adaptive = false;
    modes[4] = modes[2];
    modes[4].name = "ngram-fixed";
    modes[4].speculative.adaptive = false;
    if (args.has("--modes")) {
      std::vector<Mode> chosen;
      std::stringstream names(args.get("--modes", ""));
      for (std::string name; std::getline(names, name, ',');) {
        const auto it = std::find_if(modes.begin(), modes.end(),
                                     [&](const Mode& m) { return m.name == name; });
        hive::check(it != modes.end(), "--modes: no mode '", name,
                    "' (off, draft, ngram, draft-fixed, ngram-fixed)");
        chosen.push_back(*it);
      }
      hive::check(!chosen.empty() && chosen[0].name == "off", "--modes: must start with off");
      modes = std::move(chosen);
    }

    // What the load-aware control sees: the step costs the engine measures.
    {
      hive::Model draft(draft_dir, *choice.backend);
      const hive::SpecCostModel cost =
          hive::measure_spec_cost(model, &draft, hive::kDefaultKVCacheDType);
      std::printf("step cost (ms) by tokens:");
      for (size_t i = 0; i < cost.target.points.size(); ++i)
        std::printf(" %lld: %.2f / %.2f", static_cast<long long>(cost.target.points[i].first),
                    1e3 * cost.target.points[i].second, 1e3 * cost.draft.points[i].second);
      std::printf("  (target / draft)\n");
    }
    nlohmann::json json = {{"model", model_dir}, {"draft", draft_dir}, {"engine", engine_kind},
                           {"max_tokens", max_tokens}, {"prompts", prompt_set},
                           {"gamma", gamma}, {"rounds", rounds}, {"rows", nlohmann::json::array()}};
    std::printf("%-6s %-12s %10s %8s %8s %11s %14s %9s %12s\n", "batch", "mode", "tok/s",
                "vs off", "paired", "acceptance", "tokens/verify", "formula", "ahead used");
    bool exact = true;
    for (const int batch : batches) {
      std::vector<hive::Request> requests;
      for (int i = 0; i < batch; ++i) {
        hive::Request r;
        r.id = hive::str_cat("p", i);
        r.prompt_token_ids =
            tokenizer.encode(prompts[static_cast<size_t>(i) % prompts.size()], false);
        r.stop.max_tokens = max_tokens;
        r.stop.ignore_eos = true;
        requests.push_back(std::move(r));
      }
      std::map<std::string, Result> results;
      for (int round = 0; round < rounds; ++round)
        for (const Mode& mode : modes) {
          Result r = engine_kind == "actor" ? run_actor(model_dir, mode, requests, batch)
                                            : run_once(model, mode, requests, batch);
          auto [it, fresh] = results.try_emplace(mode.name, r);
          if (!fresh) it->second.seconds.push_back(r.seconds[0]);
        }
      const double off_rate =
          static_cast<double>(results["off"].generated) / median(results["off"].seconds);
      for (const Mode& mode : modes) {
        const Result& r = results[mode.name];
        const double rate = static_cast<double>(r.generated) / median(r.seconds);
        if (r.outputs != results["off"].outputs) {
          std::fprintf(stderr, "bench_speculative: batch %d, %s: outputs differ from off\n", batch,
                       mode.name.c_str());
          exact = false;
        }
        // (1 - α^(γ+1)) / (1 - α) at the mean draft length.
        const double alpha = r.spec.acceptance_rate();
        const double mean_gamma = r.spec.num_drafts > 0
                                      ? static_cast<double>(r.spec.num_draft_tokens) /
                                            static_cast<double>(r.spec.num_drafts)
                                      : 0.0;
        const double formula =
            alpha < 1.0 ? (1.0 - std::pow(alpha, mean_gamma + 1.0)) / (1.0 - alpha) : mean_gamma + 1;
        // Each round's ratio: the same tokens in off's time over this mode's.
        std::vector<double> paired;
        for (size_t i = 0; i < r.seconds.size(); ++i)
          paired.push_back(results["off"].seconds[i] / r.seconds[i]);
        const double paired_ratio = median(paired);
        std::printf("%-6d %-12s %10.1f %7.2fx %7.2fx %10.1f%% %14.2f %9.2f %5lld/%-6lld\n", batch,
                    mode.name.c_str(), rate, rate / off_rate, paired_ratio, 100.0 * alpha,
                    r.spec.mean_accepted_length(), r.spec.num_drafts > 0 ? formula : 0.0,
                    static_cast<long long>(r.used_ahead), static_cast<long long>(r.proposed_ahead));
        json["rows"].push_back({{"batch", batch},
                                {"mode", mode.name},
                                {"tokens_per_second", rate},
                                {"ratio_to_off", rate / off_rate},
                                {"paired_ratio_to_off", paired_ratio},
                                {"seconds", r.seconds},
                                {"acceptance_rate", r.spec.acceptance_rate()},
                                {"tokens_per_verifying_step", r.spec.mean_accepted_length()},
                                {"formula_tokens_per_step", r.spec.num_drafts > 0 ? formula : 0.0},
                                {"mean_draft_length", mean_gamma},
                                {"accepted_per_position", r.spec.accepted_per_position},
                                {"drafts_per_position", r.spec.drafts_per_position},
                                {"proposed_ahead", r.proposed_ahead},
                                {"used_ahead", r.used_ahead}});
      }
    }
    const std::string json_path = args.get("--json", "");
    if (!json_path.empty()) std::ofstream(json_path) << json.dump(2) << "\n";
    return exact ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_speculative: %s\n", e.what());
    return 1;
  }
}
