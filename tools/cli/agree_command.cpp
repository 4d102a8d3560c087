// hive agree: the greedy agreement rate of a draft model with a target, the
// α of speculative decoding's (1 - α^(γ+1)) / (1 - α) tokens per target pass.
//
// For each prompt (a JSON line of --prompts, as hive run reads them: "prompt"
// or "prompt_ids", optionally "chat", "id" and "max_tokens"), the target
// continues greedily for up to max_tokens tokens (--max-tokens when the line
// has none; stopping at its end-of-sequence token). At
// each of those positions the draft sees the same history (prompt plus the
// target's tokens so far) and picks its greedy next token; α is the fraction
// of positions where the two picks are equal, over all prompts. Logits that
// are not finite (broken weights) make no agreement: an error.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <span>

#include "base/error.hpp"
#include "kernels/backend_select.hpp"
#include "runtime/engine/generate.hpp"
#include "runtime/engine/input_processor.hpp"
#include "runtime/model/model.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/output.hpp"
#include "tools/cli/progress.hpp"
#include "tools/cli/prompt_file.hpp"
#include "tools/cli/window_logits.hpp"

namespace hive::cli {

namespace {

// Agreement compares greedy picks: the sampling keys of a prompt line do not apply.
const PromptKeys kAgreePromptKeys = {"hive agree",
                                     {"id", "prompt", "prompt_ids", "chat", "max_tokens"}};

bool all_finite(std::span<const float> values) {
  return std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v); });
}

void check_finite(bool finite, const char* which, const std::string& where) {
  check(finite, where, ": the ", which,
        "'s logits are not finite (NaN or infinite weights?): no agreement to measure");
}

struct Agreement {
  int64_t agreed = 0;
  int64_t positions = 0;
};

// The target's greedy continuation of `prompt`, then one draft pass over the
// whole history: draft row prompt.size() - 1 + j predicts target token j.
// The target's logprobs show whether its logits were finite.
Agreement agree_on(Model& target, WindowScorer& draft, const std::vector<int32_t>& prompt,
                   int64_t max_tokens, const std::string& where) {
  GenerateOptions greedy;
  greedy.max_tokens = max_tokens;
  greedy.sampling.logprobs = 0;
  GenerateResult generated;
  try {
    generated = generate(target, prompt, greedy);
  } catch (const Error& e) {  // the sampler refuses all-NaN logits
    fail(where, ": the target: ", e.what());
  }
  for (const TokenLogprobs& token : generated.logprobs)
    check_finite(std::isfinite(token.logprob), "target", where);
  const std::vector<int32_t>& picks = generated.tokens;
  std::vector<int32_t> history = prompt;
  history.insert(history.end(), picks.begin(), picks.end() - 1);
  const std::span<const float> logits = draft.logits(history);
  const auto vocab = static_cast<size_t>(draft.vocab_size());
  Agreement result;
  for (size_t j = 0; j < picks.size(); ++j) {
    const std::span<const float> row = logits.subspan((prompt.size() - 1 + j) * vocab, vocab);
    check_finite(all_finite(row), "draft", where);
    result.agreed += argmax(row) == picks[j];
    ++result.positions;
  }
  return result;
}

}  // namespace

int run_agree(const std::vector<std::string>& argv) {
  const Args args(argv, {"--target", "--draft", "--prompts", "--max-tokens", "--device"}, {});
  const std::string target_dir = args.require("--target");
  const std::string draft_dir = args.require("--draft");
  const std::vector<PromptInput> prompts =
      read_prompt_file(args.require("--prompts"), kAgreePromptKeys);
  const int64_t max_tokens = args.get_int("--max-tokens", 32, 1, int64_t{1} << 20);

  BackendChoice choice = select_backend(parse_device_choice(args.get("--device", "auto"), "--device"),
                                        Model::required_ops());
  if (!choice.note.empty()) std::fprintf(stderr, "%s\n", choice.note.c_str());
  Progress loading = Progress::on_stderr("loading " + target_dir + " and " + draft_dir);
  Model target(target_dir, *choice.backend);
  Model draft(draft_dir, *choice.backend);
  loading.done();
  check(target.config().vocab_size == draft.config().vocab_size, "the draft's vocabulary (",
        draft.config().vocab_size, ") differs from the target's (", target.config().vocab_size,
        "); they must share a tokenizer");
  // Both models turn each prompt into ids (text, chat or ids) and check that
  // it fits their context with its max_tokens; they must agree on the ids.
  InputProcessor target_inputs(target_dir, target.config(), {});
  InputProcessor draft_inputs(draft_dir, draft.config(), {});
  std::vector<Request> requests;
  int64_t window = 0;
  for (const PromptInput& p : prompts) {
    RequestInput input = p.input;
    input.max_tokens = input.max_tokens.value_or(max_tokens);
    try {
      requests.push_back(target_inputs.process(input).request);
      check(
          draft_inputs.process(input).request.prompt_token_ids == requests.back().prompt_token_ids,
          "the draft's tokenizer or chat template gives other ids than the target's; they "
          "must share a tokenizer");
    } catch (const Error& e) {
      fail(p.where, ": ", e.what());
    }
    const Request& r = requests.back();
    window =
        std::max(window, static_cast<int64_t>(r.prompt_token_ids.size()) + r.stop.max_tokens - 1);
  }
  WindowScorer draft_scorer(draft, window);

  Agreement total;
  Progress progress =
      Progress::on_stderr("agree", static_cast<int64_t>(requests.size()), "prompts");
  for (size_t i = 0; i < requests.size(); ++i) {
    const Agreement a = agree_on(target, draft_scorer, requests[i].prompt_token_ids,
                                 requests[i].stop.max_tokens, prompts[i].where);
    progress.clear();
    std::printf("%s: %lld of %lld\n", requests[i].id.c_str(), static_cast<long long>(a.agreed),
                static_cast<long long>(a.positions));
    flush_stdout();
    progress.update(static_cast<int64_t>(i + 1));
    total.agreed += a.agreed;
    total.positions += a.positions;
  }
  progress.done();
  const double alpha = static_cast<double>(total.agreed) / static_cast<double>(total.positions);
  std::printf("agreement: %.4f (%lld of %lld positions, %zu prompts)\n", alpha,
              static_cast<long long>(total.agreed), static_cast<long long>(total.positions),
              prompts.size());
  for (const int gamma : {2, 4, 8}) {
    const double tokens_per_pass =
        alpha < 1 ? (1 - std::pow(alpha, gamma + 1)) / (1 - alpha) : gamma + 1.0;
    std::printf("gamma %d: %.2f tokens per target pass\n", gamma, tokens_per_pass);
  }
  return 0;
}

}  // namespace hive::cli
