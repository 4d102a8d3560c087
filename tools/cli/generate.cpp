// hive generate: token ids in, token ids out, with throughput.
#include <cstdio>

#include "kernels/backend_select.hpp"
#include "runtime/generate.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"

namespace hive::cli {

int run_generate(const std::vector<std::string>& argv) {
  const Args args(argv,
                  {"--model", "--prompt-ids", "--max-tokens", "--temperature", "--top-k",
                   "--top-p", "--seed", "--device"},
                  {"--ignore-eos"});
  const std::string model_dir = args.require("--model");
  const std::vector<int32_t> prompt = parse_id_list(args.require("--prompt-ids"), "--prompt-ids");
  GenerateOptions options;
  options.max_tokens = args.get_int("--max-tokens", 16);
  options.sampling.temperature = static_cast<float>(args.get_double("--temperature", 0.0));
  options.sampling.top_k = static_cast<int>(args.get_int("--top-k", 0));
  options.sampling.top_p = static_cast<float>(args.get_double("--top-p", 1.0));
  options.sampling.seed = static_cast<uint64_t>(args.get_int("--seed", 0));
  options.ignore_eos = args.has("--ignore-eos");
  validate(options.sampling);

  BackendChoice choice = select_backend(args.get("--device", "auto"), Model::required_ops());
  if (!choice.note.empty()) std::fprintf(stderr, "%s\n", choice.note.c_str());
  Model model(model_dir, *choice.backend);
  const GenerateResult result = generate(model, prompt, options, [](int32_t token) {
    std::printf("%d ", token);
    std::fflush(stdout);
  });
  std::printf("\n");
  std::fflush(stdout);  // ids first, then the stats on stderr
  const auto decoded = static_cast<double>(result.tokens.size() - 1);
  std::fprintf(stderr, "prefill: %zu tokens in %.3f s (%.1f tokens/s)\n", prompt.size(),
               result.prefill_seconds,
               static_cast<double>(prompt.size()) / result.prefill_seconds);
  if (decoded > 0)
    std::fprintf(stderr, "decode: %.0f tokens in %.3f s (%.1f tokens/s)%s\n", decoded,
                 result.decode_seconds, decoded / result.decode_seconds,
                 result.stopped_by_eos ? ", stopped at EOS" : "");
  return 0;
}

}  // namespace hive::cli
