// hive serve: the OpenAI-compatible HTTP server (with SSE), the WebSocket
// stream and the chat page, over the actor engine. The model comes from a
// launch file (--config) or a directory (--model; the bundled one by
// default); flags override the launch file's server section.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <thread>

#include "actors/engine.hpp"
#include "actors/gateway/server.hpp"
#include "base/error.hpp"
#include "runtime/engine/input_processor.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/matmul_precision.hpp"
#include "tools/cli/process_ranks.hpp"
#include "tools/cli/text_prompt.hpp"

namespace hive::cli {

namespace {

// Without a launch file: the bundled CPU defaults (configs/cpu.yaml's KV
// budget and scheduler limits) for the model directory.
LaunchConfig config_for_model(const std::string& model_dir, const Args& args) {
  LaunchConfig config;
  config.model = model_dir;
  config.device = parse_device_choice(args.get("--device", "auto"), "--device");
  if (args.has("--kv-budget-mb"))  // else kv_cache.memory_fraction of the free memory
    config.kv_cache.memory_budget_bytes = args.get_int("--kv-budget-mb", 0, 1, int64_t{1} << 30)
                                          << 20;
  if (args.has("--kv-cache-dtype"))
    config.kv_cache.dtype = parse_kv_cache_dtype(args.get("--kv-cache-dtype", ""), "--kv-cache-dtype");
  config.scheduler.max_num_seqs = 32;
  config.scheduler.max_num_batched_tokens = 256;
  return config;
}

}  // namespace

int run_serve(const std::vector<std::string>& argv) {
  const Args args(argv,
                  {"--model", "--config", "--host", "--port", "--api-key", "--max-queued-requests",
                   "--max-connections", "--served-model-name", "--device", "--kv-budget-mb", "--kv-cache-dtype",
                   "--matmul-precision"},
                  {"--dequantize"});
  check(!(args.has("--model") && args.has("--config")),
        "give --model or --config, not both (the launch file names its model)");
  check(!(args.has("--config") &&
          (args.has("--device") || args.has("--kv-budget-mb") || args.has("--kv-cache-dtype"))),
        "--device, --kv-budget-mb and --kv-cache-dtype are for --model; a launch file sets them "
        "itself");
  LaunchConfig config = args.has("--config") ? load_launch_config(args.get("--config", ""))
                                             : config_for_model(model_dir_or_default(args), args);
  if (args.has("--dequantize")) config.dequantize = true;
  apply_matmul_precision(args, config.matmul_precision);
  const ProcessRanks ranks = start_process_ranks(config);
  if (ranks.served_worker) return 0;
  ServerConfig& server = config.server;
  server.host = args.get("--host", server.host);
  server.port = static_cast<int>(args.get_int("--port", server.port, 0, 65535));
  server.api_key = args.get("--api-key", server.api_key);
  server.max_queued_requests =
      args.get_int("--max-queued-requests", server.max_queued_requests, 1, int64_t{1} << 20);
  server.max_connections =
      args.get_int("--max-connections", server.max_connections, 1, int64_t{1} << 20);
  server.served_model_name = args.get("--served-model-name", server.served_model_name);
  if (server.served_model_name.empty())
    server.served_model_name = std::filesystem::path(config.model).lexically_normal().filename();

  // SIGINT and SIGTERM go to one thread that drains the server; every
  // thread started from here on (the engine's too) inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Engine engine(config);
  report_compute("hive serve", engine.device_note());
  InputLimits limits;
  limits.max_sequence_tokens = engine.max_sequence_tokens();
  limits.default_max_tokens = 16;       // OpenAI's completions default
  limits.default_max_tokens_text = 16;
  limits.default_max_tokens_chat = engine.max_sequence_tokens();  // all that is left
  limits.max_n = config.scheduler.max_num_seqs;
  const ModelConfig& model = engine.model_config();
  InputProcessor inputs(config.model, model, limits);
  inputs.tokenizer();  // answers are text: a model without a tokenizer fails here, not per request
  for (const std::string& key : inputs.ignored_generation_keys())
    std::fprintf(stderr, "note: generation_config.json sets %s, which Hive does not apply\n",
                 key.c_str());

  gateway::ServerOptions options;
  options.host = server.host;
  options.port = static_cast<uint16_t>(server.port);
  options.api_key = server.api_key;
  options.model_name = server.served_model_name;
  options.max_model_len = engine.max_sequence_tokens();
  options.max_queued_requests = server.max_queued_requests;
  options.max_connections = static_cast<size_t>(server.max_connections);
  gateway::Server http(engine, inputs, options);
  http.listen();
  const std::string url = str_cat("http://", server.host, ":", http.port());
  std::fprintf(stderr,
               "hive serve: %s (model '%s'); chat page at %s/\n"
               "  curl %s/v1/completions -H 'Content-Type: application/json' "
               "-d '{\"prompt\": \"Once upon a time\", \"max_tokens\": 32}'\n",
               url.c_str(), options.model_name.c_str(), url.c_str(), url.c_str());
  std::fflush(stderr);

  std::thread stopper([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    std::fprintf(stderr, "hive serve: %s, finishing the requests in flight\n",
                 signal == SIGINT ? "interrupted" : "terminated");
    http.stop();
  });
  http.run();
  stopper.join();
  const int64_t failed = engine.shutdown(ShutdownMode::drain);
  std::fprintf(stderr, "hive serve: stopped (%lld requests failed at shutdown)\n",
               static_cast<long long>(failed));
  return 0;
}

}  // namespace hive::cli
