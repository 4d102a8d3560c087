// generation_config.json of arbitrary bytes next to a valid config.json,
// loaded as every command loads a model's configuration.
#include "base/error.hpp"
#include "runtime/loader/model_config.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

const hive::fuzz::ScratchDir& model_dir() {
  static const hive::fuzz::ScratchDir dir = [] {
    hive::fuzz::ScratchDir d;
    d.write("config.json", R"({"architectures": ["LlamaForCausalLM"], "vocab_size": 64,
      "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
      "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 128,
      "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "eos_token_id": 2})");
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& dir = model_dir();
  dir.write("generation_config.json", hive::fuzz::text(data, size));
  try {
    const hive::ModelConfig config = hive::load_model_config(dir.path());
    const hive::SamplingParams params = config.generation.sampling();
    volatile int64_t max_tokens = config.generation.max_tokens_or(16) + params.top_k;
    (void)max_tokens;
  } catch (const hive::Error&) {
    // A clear error naming the file and key is the expected answer.
  }
  return 0;
}
