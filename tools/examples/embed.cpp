// Embedding Hive in a C++ program: an Engine from a launch file, one request
// streamed token by token, then the engine's metrics.
//
//   hive_embed_example CONFIG.yaml [PROMPT_TOKEN_ID ...]
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>

#include "actors/engine.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CONFIG.yaml [PROMPT_TOKEN_ID ...]\n", argv[0]);
    return 2;
  }
  try {
    hive::Engine engine(hive::load_hive_config(argv[1]));
    hive::Request request;
    request.id = "example";
    for (int i = 2; i < argc; ++i) request.prompt_token_ids.push_back(std::atoi(argv[i]));
    if (request.prompt_token_ids.empty()) request.prompt_token_ids = {1};
    request.stop.max_tokens = 16;
    for (const hive::TokenEvent& event : engine.submit(request)) {
      if (!event.error.empty()) throw std::runtime_error(event.error);
      if (event.finished) break;  // the finished event repeats every token
      for (const int32_t token : event.token_ids) std::printf("%d ", token);
      std::fflush(stdout);
    }
    const hive::EngineMetrics m = engine.metrics();
    std::printf("\n%lld tokens in %lld steps on %d rank(s)\n",
                static_cast<long long>(m.num_generated_tokens), static_cast<long long>(m.num_steps),
                m.world_size);
    engine.shutdown();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
