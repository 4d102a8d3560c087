// hive: the command-line entry point. Each subcommand lives in its own file.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/output.hpp"
#include "tools/cli/process_ranks.hpp"

namespace {

constexpr const char* kUsage =
    "usage: hive <command> [flags]\n"
    "\n"
    "commands:\n"
    "  generate [--model DIR] \"TEXT\" [\"TEXT\" ...] [--chat]\n"
    "  generate [--model DIR] --prompt-ids 1,2,3 [--prompt-ids ...] | --prompts-file FILE\n"
    "           [--max-tokens N] [--temperature T] [--top-k K] [--top-p P] [--seed S]\n"
    "           [--min-p P] [--presence-penalty X] [--frequency-penalty X]\n"
    "           [--repetition-penalty X] [--logprobs N]\n"
    "           [--ignore-eos] [--device auto|cpu|cuda] [--block-size N] [--max-num-seqs N]\n"
    "           [--max-num-batched-tokens N] [--kv-budget-mb N] [--swap-space-mb N]\n"
    "           [--enable-prefix-caching] [--kv-cache-dtype bf16|f32|int8|fp8]\n"
    "           [--speculative ngram | --draft-model DIR] [--num-speculative-tokens N]\n"
    "           [--matmul-precision f32|bf16] [--dequantize]\n"
    "           Continues text (streamed; --chat wraps it in the chat template) or token ids,\n"
    "           with tokens/s. Several prompts run batched, one output line each (the KV and\n"
    "           scheduler flags are for that case). The model defaults to $HIVE_MODEL, else\n"
    "           the bundled models/hive-moe-target; any command's --model DIR may also be\n"
    "           one .gguf file (tokenizer and chat template from its metadata; Q8_0, Q4_0,\n"
    "           Q5_0, Q5_1, Q4_K, Q5_K, Q6_K tensors multiplied as stored, or with\n"
    "           --dequantize widened to bf16 at load, as before: bf16's memory and speed).\n"
    "           Sampling flags and --max-tokens left out take the model's\n"
    "           generation_config.json values, else greedy and 64/16.\n"
    "           Without --kv-budget-mb the KV cache takes 0.9 of the free memory, no more\n"
    "           than --max-num-seqs sequences of the model's context length can fill.\n"
    "           Speculative decoding: n-gram lookup in the sequence, or a draft model with\n"
    "           the same tokenizer, proposes N tokens (default 4) the model verifies at once.\n"
    "           --matmul-precision (also run, serve, a launch file's matmul_precision,\n"
    "           HIVE_MATMUL_PRECISION): bf16, the default, rounds activations to bf16 for\n"
    "           bf16 weights on CPUs with AVX512_BF16 or AMX, as llama.cpp does; f32 is the\n"
    "           exact mode, the reference's bits (2-6x slower prefill).\n"
    "  run      --config FILE --prompts FILE [--matmul-precision f32|bf16] [--dequantize]\n"
    "           [--device auto|cpu|cuda] [--kv-budget-mb N] [--kv-cache-dtype T]\n"
    "           [--max-num-seqs N] [--max-num-batched-tokens N] [--print-config]\n"
    "           Runs JSON-lines prompts through the actor runtime; prints outputs and stats.\n"
    "           --dequantize (also serve, a launch file's dequantize: true): as generate's.\n"
    "  serve    [--model DIR | --config FILE] [--host H] [--port P] [--api-key KEY]\n"
    "           [--max-queued-requests N] [--max-connections N] [--served-model-name NAME]\n"
    "           [--device auto|cpu|cuda]\n"
    "           [--kv-budget-mb N] [--kv-cache-dtype bf16|f32|int8|fp8]\n"
    "           [--matmul-precision f32|bf16] [--dequantize]\n"
    "           [--max-num-seqs N] [--max-num-batched-tokens N] [--print-config]\n"
    "           Flags override the launch file; --print-config prints the resolved config,\n"
    "           each value with its source (default, file:line, flag), and exits.\n"
    "           OpenAI-compatible HTTP server (/v1/completions, /v1/chat/completions, SSE),\n"
    "           a WebSocket stream (/v1/stream), /metrics, and a chat page at /.\n"
    "  bench serve --url URL | --compare [--model DIR] [--num-prompts N] [--max-concurrency N]\n"
    "           [--request-rate R|inf] [--input-len N] [--output-len N] [--seed S] [--rounds R]\n"
    "           [--json FILE]\n"
    "           A load client: request throughput, output tok/s, TTFT, TPOT, ITL (mean,\n"
    "           median, p99); --compare serves here and runs the same load embedded too\n"
    "           (R alternating rounds, the median reported).\n"
    "  inspect  --model DIR | --devices\n"
    "           Prints architecture, parameter counts, weight bytes and KV bytes per token,\n"
    "           or the compute devices this build can use.\n"
    "  quantize --model DIR --type q8_0|q4_0|q4_k_m --out FILE.gguf [--force]\n"
    "           Writes the Hugging Face directory as one GGUF file (v3) that llama.cpp and\n"
    "           Hive load: llama.cpp's tensor layout and metadata, the tokenizer and chat\n"
    "           template, weights quantized with llama.cpp's type mix (q4_k_m: Q4_K, with\n"
    "           Q6_K for the output and half of attn_v / ffn_down). Refuses an existing\n"
    "           --out unless --force; the file appears only when complete.\n"
    "  eval-ppl [--model DIR] --text FILE [--window N] [--device auto|cpu|cuda]\n"
    "           [--kv-cache-dtype bf16|f32|int8|fp8] [--second-half] [--dequantize]\n"
    "           Prints the model's perplexity on the text (default model: the bundled one).\n"
    "           --second-half scores whole windows' second halves, as llama-perplexity does.\n"
    "  agree    --target DIR --draft DIR --prompts FILE [--max-tokens N] [--device ...]\n"
    "           Prints how often the draft's greedy token equals the target's (alpha);\n"
    "           --prompts is JSON lines, as for run (\"prompt\" or \"prompt_ids\", \"chat\",\n"
    "           \"max_tokens\").\n"
    "  tokenize   --tokenizer DIR [--add-special-tokens]\n"
    "           Reads one JSON string per line, prints one JSON array of token ids per line.\n"
    "  detokenize --tokenizer DIR [--skip-special-tokens]\n"
    "           Reads one JSON array of token ids per line, prints one JSON string per line.\n";

// The usage lines of one command: from its line to the next command's.
std::string command_usage(const std::string& command) {
  const std::string usage = kUsage;
  std::string out;
  bool inside = false;
  for (size_t at = usage.find('\n') + 1; at < usage.size();) {
    const size_t end = usage.find('\n', at) + 1;
    const std::string line = usage.substr(at, end - at);
    const bool starts_command = line.size() > 2 && line[0] == ' ' && line[2] != ' ';
    if (starts_command) inside = line.compare(2, command.size() + 1, command + " ") == 0;
    if (inside) out += line;
    at = end;
  }
  return out;
}

int run_command(const std::string& command, const std::vector<std::string>& rest) {
  if (command == "generate") return hive::cli::run_generate(rest);
  if (command == "inspect") return hive::cli::run_inspect(rest);
  if (command == "run") return hive::cli::run_run(rest);
  if (command == "quantize") return hive::cli::run_quantize(rest);
  if (command == "serve") return hive::cli::run_serve(rest);
  if (command == "bench" && !rest.empty() && rest[0] == "serve")
    return hive::cli::run_bench_serve({rest.begin() + 1, rest.end()});
  if (command == "eval-ppl") return hive::cli::run_eval_ppl(rest);
  if (command == "agree") return hive::cli::run_agree(rest);
  if (command == "tokenize") return hive::cli::run_tokenize(rest);
  if (command == "detokenize") return hive::cli::run_detokenize(rest);
  std::fprintf(stderr, "hive: unknown command '%s'\n\n%s", command.c_str(), kUsage);
  return 2;
}

// An exception that leaves a thread (or a noexcept function) ends the
// process through std::terminate: it says why, on stderr, instead of a bare
// "terminate called", and the exit is abnormal (SIGABRT).
[[noreturn]] void say_why_and_abort() {
  const char* what = "no exception (std::terminate was called directly)";
  std::string message;
  if (const std::exception_ptr current = std::current_exception()) {
    try {
      std::rethrow_exception(current);
    } catch (const std::exception& e) {
      message = e.what();
      what = message.c_str();
    } catch (...) {
      what = "an exception of unknown type";
    }
  }
  std::fprintf(stderr, "hive: fatal: %s\n", what);
  std::fflush(stderr);
  std::abort();
}

}  // namespace

int main(int argc, char** argv) {
  std::set_terminate(say_why_and_abort);
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  const std::vector<std::string> rest(argv + 2, argv + argc);
  try {
    if (command == "--version") {
      std::printf("hive %s\n", HIVE_VERSION);
      hive::cli::flush_stdout();
      return 0;
    }
    // Every command answers --help (or -h) with its own usage.
    for (const std::string& arg : rest) {
      if (arg != "--help" && arg != "-h") continue;
      const std::string usage = command_usage(command == "bench" ? "bench serve" : command);
      if (usage.empty()) break;  // an unknown command: said below
      std::printf("usage: hive %s", usage.c_str() + 2);
      hive::cli::flush_stdout();
      return 0;
    }
    const int status = run_command(command, rest);
    // Every command's output is checked here, once: a failed write is exit 1.
    hive::cli::flush_stdout();
    return status;
  } catch (const hive::Error& e) {
    std::fprintf(stderr, "hive %s: error: %s\n", command.c_str(), e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "hive %s: error: out of memory\n", command.c_str());
  } catch (const std::exception& e) {
    // Not one of Hive's own checks (a library's): still a message, not an abort.
    std::fprintf(stderr, "hive %s: error: %s\n", command.c_str(), e.what());
  }
  // A process of an MPI job (parallel.transport: mpi, nccl) that fails ends the
  // job, its message printed: its peers may wait for it in a collective.
  hive::cli::end_process_ranks_on_error();
  return 1;
}
