// config.json of arbitrary bytes, loaded as every command loads a model's
// configuration (no generation_config.json next to it).
#include "base/error.hpp"
#include "runtime/loader/model_config.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const hive::fuzz::ScratchDir dir;
  dir.write("config.json", hive::fuzz::text(data, size));
  try {
    const hive::ModelConfig config = hive::load_model_config(dir.path());
    volatile int64_t kv_bytes = config.kv_bytes_per_token(2);
    (void)kv_bytes;
  } catch (const hive::Error&) {
    // A clear error naming the file and key is the expected answer.
  }
  return 0;
}
