// Built against the installed package: one request through hive::Engine (the
// actor runtime), checked token for token against the offline LLMEngine on
// the same model.
//
//   hive_install_consumer MODEL_DIR
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <vector>

#include "actors/engine.hpp"
#include "kernels/cpu/cpu_backend.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODEL_DIR\n", argv[0]);
    return 2;
  }
  try {
    hive::HiveConfig options;
    options.model = argv[1];
    options.engine.block_size = 4;
    options.engine.kv_budget = hive::KVBudget{int64_t{1} << 20, 0.0};
    hive::Request request;
    request.id = "consumer";
    request.prompt_token_ids = {5, 9, 13, 2};
    request.stop.max_tokens = 6;
    request.stop.ignore_eos = true;

    std::vector<int32_t> streamed;
    hive::Engine engine(options);
    for (const hive::TokenEvent& event : engine.submit(request)) {
      if (!event.error.empty()) throw std::runtime_error(event.error);
      if (!event.finished)
        streamed.insert(streamed.end(), event.token_ids.begin(), event.token_ids.end());
    }
    engine.shutdown();

    hive::CpuBackend cpu;
    hive::Model model(options.model, cpu);
    hive::LLMEngine offline(model, options.engine);
    const std::vector<int32_t> expected = offline.generate({request}).at(0).samples.at(0).token_ids;

    for (const int32_t token : streamed) std::printf("%d ", token);
    std::printf("(engine)\n");
    for (const int32_t token : expected) std::printf("%d ", token);
    std::printf("(offline)\n");
    if (streamed.size() != 6 || streamed != expected) {
      std::fprintf(stderr, "error: the engine's 6 tokens differ from the offline engine's\n");
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
