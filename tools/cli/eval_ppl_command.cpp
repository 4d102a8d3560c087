// hive eval-ppl: the perplexity of a model on a text file.
//
// The text is tokenized with the model's tokenizer and cut into consecutive,
// non-overlapping windows of up to --window tokens (default: the model's
// max_position_embeddings). Each window runs from an empty cache; every
// token after a window's first is predicted from the tokens before it in the
// window. Perplexity = exp(total negative log-likelihood / predicted tokens),
// the same windows tools/eval_models.py scores with transformers.
//
// --second-half scores as llama.cpp's llama-perplexity does, so the two
// engines compare on the same tokens: only whole windows, and in each only
// the predictions of its second half (tokens after window/2 + 1), each from
// at least window/2 tokens of context.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.hpp"
#include "kernels/backend_select.hpp"
#include "runtime/engine/model_text.hpp"
#include "runtime/model/kv_budget.hpp"
#include "runtime/model/model.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/progress.hpp"
#include "tools/cli/text_prompt.hpp"
#include "tools/cli/window_logits.hpp"

namespace hive::cli {

namespace {

std::string read_text_file(const std::string& path) {
  check(!std::filesystem::is_directory(path), "--text: '", path,
        "' is a directory (give a text file)");
  std::ifstream in(path, std::ios::binary);
  check(in.good(), "--text: cannot open '", path, "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Score {
  double negative_log_likelihood = 0;
  int64_t predicted = 0;
  int64_t windows = 0;
};

Score score(WindowScorer& scorer, std::span<const int32_t> ids, bool second_half) {
  Score total;
  const int64_t window_tokens = scorer.max_tokens();
  auto count = static_cast<int64_t>(ids.size());
  if (second_half) count -= count % window_tokens;
  const int64_t first_scored = second_half ? window_tokens / 2 : 0;
  const int64_t vocab = scorer.vocab_size();
  Progress progress = Progress::on_stderr(
      "eval-ppl", (count - 1 + scorer.max_tokens() - 1) / scorer.max_tokens(), "windows");
  for (int64_t start = 0; start + 1 < count; start += scorer.max_tokens()) {
    const int64_t length = std::min(scorer.max_tokens(), count - start);
    const auto window = ids.subspan(static_cast<size_t>(start), static_cast<size_t>(length));
    const std::span<const float> logits = scorer.logits(window);
    for (int64_t i = first_scored; i + 1 < length; ++i) {
      const auto row = logits.subspan(static_cast<size_t>(i * vocab), static_cast<size_t>(vocab));
      total.negative_log_likelihood +=
          negative_log_likelihood(row, window[static_cast<size_t>(i + 1)]);
      ++total.predicted;
    }
    progress.update(++total.windows);
  }
  return total;
}

}  // namespace

int run_eval_ppl(const std::vector<std::string>& argv) {
  const Args args(argv, {"--model", "--text", "--window", "--device", "--kv-cache-dtype"},
                  {"--second-half", "--dequantize"});
  const DType kv_dtype =
      parse_kv_cache_dtype(args.get("--kv-cache-dtype", "bf16"), "--kv-cache-dtype");
  const std::string model_dir = model_dir_or_default(args);
  const std::string text_path = args.require("--text");
  const std::string text = read_text_file(text_path);

  BackendChoice choice = select_backend(parse_device_choice(args.get("--device", "auto"), "--device"),
                                        Model::required_ops());
  if (!choice.note.empty()) std::fprintf(stderr, "%s\n", choice.note.c_str());
  Progress loading = Progress::on_stderr("loading " + model_dir);
  Model model(model_dir, *choice.backend, LoadOptions{.dequantize = args.has("--dequantize")});
  loading.done();
  const int64_t max_positions = model.config().max_position_embeddings;
  const int64_t window = args.get_int("--window", max_positions);
  check(window >= 2 && window <= max_positions, "--window must be between 2 and the model's ",
        "max_position_embeddings ", max_positions, " (got ", window, ")");

  const Tokenizer tokenizer = load_tokenizer(model_dir);
  const std::vector<int32_t> ids = tokenizer.encode(text, /*add_special_tokens=*/true);
  check(ids.size() >= 2, "--text: '", text_path, "' has ", ids.size(),
        " tokens; perplexity needs at least 2");

  const bool second_half = args.has("--second-half");
  check(!second_half || std::ssize(ids) >= window, "--second-half: '", text_path, "' has ",
        ids.size(), " tokens, fewer than one window of ", window);

  WindowScorer scorer(model, window, kv_dtype);
  const Score total = score(scorer, ids, second_half);
  const double mean = total.negative_log_likelihood / static_cast<double>(total.predicted);
  // NaN or infinite logits (broken weights) make no perplexity: an error,
  // not a number that reads like a result.
  check(std::isfinite(mean), "the model's log-likelihood is ", mean, " over ", total.predicted,
        " tokens: its logits are not finite (NaN or infinite weights?)");
  std::printf("model:      %s\n", model_dir.c_str());
  std::printf("kv cache:   %s\n", std::string(dtype_name(kv_dtype)).c_str());
  std::printf("tokens:     %zu in %lld windows of up to %lld\n", ids.size(),
              static_cast<long long>(total.windows), static_cast<long long>(window));
  std::printf("predicted:  %lld\n", static_cast<long long>(total.predicted));
  std::printf("mean nll:   %.6f\n", mean);
  std::printf("perplexity: %.6f\n", std::exp(mean));
  return 0;
}

}  // namespace hive::cli
