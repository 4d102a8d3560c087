// hive serve: the OpenAI-compatible HTTP server (with SSE), the WebSocket
// stream and the chat page, over the actor engine. The model comes from a
// launch file (--config) or a directory (--model; the bundled one by
// default); flags override the launch file's values (config_flags.hpp).
// --print-config prints the resolved tree and exits without loading weights.
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
#include "tools/cli/config_flags.hpp"
#include "tools/cli/matmul_precision.hpp"
#include "tools/cli/process_ranks.hpp"
#include "tools/cli/text_prompt.hpp"

namespace hive::cli {

namespace {

// Without a launch file: the model directory (or the bundled model) with
// the tree's defaults, as a launch file that names only its model gets.
HiveConfig config_for_model(const Args& args) {
  HiveConfig config;
  config.model = model_dir_or_default(args);
  if (!args.has("--model")) config.sources["model"] = "the bundled model";
  return config;
}

}  // namespace

int run_serve(const std::vector<std::string>& argv) {
  std::set<std::string> valued = config_value_flags(true), switches = config_switches();
  valued.insert("--config");
  switches.insert("--print-config");
  const Args args(argv, valued, switches);
  check(!(args.has("--model") && args.has("--config")),
        "give --model or --config, not both (the launch file names its model)");
  HiveConfig config =
      config_from_args(args, args.has("--config") ? HiveConfig{} : config_for_model(args));
  if (args.has("--print-config")) {
    print_resolved_config(config);
    return 0;
  }
  // From config.json: a mistake fails before the weights load (the Engine
  // resolves its copy again, to the same values).
  resolve(config, load_model_config(config.model));
  apply_matmul_precision(args, config.matmul_precision);
  const ProcessRanks ranks = start_process_ranks(config);
  if (ranks.served_worker) return 0;
  const ServerConfig& server = config.server;

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
  limits.max_n = config.engine.scheduler.max_num_seqs;
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
