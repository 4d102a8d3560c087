// hive agree: the greedy agreement rate of a draft model with a target, the
// α of speculative decoding's (1 - α^(γ+1)) / (1 - α) tokens per target pass.
//
// For each prompt (one per line of --prompts), the target continues greedily
// for up to --max-tokens tokens (stopping at its end-of-sequence token). At
// each of those positions the draft sees the same history (prompt plus the
// target's tokens so far) and picks its greedy next token; α is the fraction
// of positions where the two picks are equal, over all prompts.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "kernels/backend_select.hpp"
#include "kernels/error.hpp"
#include "runtime/engine/generate.hpp"
#include "runtime/model/model.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/window_logits.hpp"

namespace hive::cli {

namespace {

std::vector<std::string> read_prompts(const std::string& path) {
  std::ifstream in(path);
  check(in.good(), "--prompts: cannot open '", path, "'");
  std::vector<std::string> prompts;
  for (std::string line; std::getline(in, line);)
    if (line.find_first_not_of(" \t\r") != std::string::npos) prompts.push_back(line);
  check(!prompts.empty(), "--prompts: '", path, "' holds no prompt (one per line)");
  return prompts;
}

struct Agreement {
  int64_t agreed = 0;
  int64_t positions = 0;
};

// The target's greedy continuation of `prompt`, then one draft pass over the
// whole history: draft row prompt.size() - 1 + j predicts target token j.
Agreement agree_on(Model& target, WindowScorer& draft, const std::vector<int32_t>& prompt,
                   int64_t max_tokens) {
  GenerateOptions greedy;
  greedy.max_tokens = max_tokens;
  const std::vector<int32_t> picks = generate(target, prompt, greedy).tokens;
  std::vector<int32_t> history = prompt;
  history.insert(history.end(), picks.begin(), picks.end() - 1);
  const std::span<const float> logits = draft.logits(history);
  const auto vocab = static_cast<size_t>(draft.vocab_size());
  Agreement result;
  for (size_t j = 0; j < picks.size(); ++j) {
    const size_t row = prompt.size() - 1 + j;
    result.agreed += argmax(logits.subspan(row * vocab, vocab)) == picks[j];
    ++result.positions;
  }
  return result;
}

}  // namespace

int run_agree(const std::vector<std::string>& argv) {
  const Args args(argv, {"--target", "--draft", "--prompts", "--max-tokens", "--device"}, {});
  const std::string target_dir = args.require("--target");
  const std::string draft_dir = args.require("--draft");
  const std::vector<std::string> prompts = read_prompts(args.require("--prompts"));
  const int64_t max_tokens = args.get_int("--max-tokens", 32, 1, int64_t{1} << 20);
  check(max_tokens >= 1, "--max-tokens must be >= 1 (got ", max_tokens, ")");

  BackendChoice choice = select_backend(args.get("--device", "auto"), Model::required_ops());
  if (!choice.note.empty()) std::fprintf(stderr, "%s\n", choice.note.c_str());
  Model target(target_dir, *choice.backend);
  Model draft(draft_dir, *choice.backend);
  check(target.config().vocab_size == draft.config().vocab_size, "the draft's vocabulary (",
        draft.config().vocab_size, ") differs from the target's (", target.config().vocab_size,
        "); they must share a tokenizer");
  const Tokenizer tokenizer = Tokenizer::from_directory(target_dir);
  const Tokenizer draft_tokenizer = Tokenizer::from_directory(draft_dir);

  std::vector<std::vector<int32_t>> encoded;
  size_t longest = 0;
  for (const std::string& prompt : prompts) {
    encoded.push_back(tokenizer.encode(prompt, /*add_special_tokens=*/true));
    check(!encoded.back().empty(), "--prompts: the prompt '", prompt, "' has no tokens");
    check(draft_tokenizer.encode(prompt, true) == encoded.back(), "the draft's tokenizer splits '",
          prompt, "' differently from the target's; they must share a tokenizer");
    longest = std::max(longest, encoded.back().size());
  }
  const int64_t window = static_cast<int64_t>(longest) + max_tokens - 1;
  for (const Model* model : {&target, &draft})
    check(window <= model->config().max_position_embeddings, "the longest prompt (", longest,
          " tokens) plus --max-tokens ", max_tokens, " exceeds max_position_embeddings ",
          model->config().max_position_embeddings);
  WindowScorer draft_scorer(draft, window);

  Agreement total;
  for (size_t i = 0; i < encoded.size(); ++i) {
    const Agreement a = agree_on(target, draft_scorer, encoded[i], max_tokens);
    std::printf("prompt %zu: %lld of %lld\n", i + 1, static_cast<long long>(a.agreed),
                static_cast<long long>(a.positions));
    total.agreed += a.agreed;
    total.positions += a.positions;
  }
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
