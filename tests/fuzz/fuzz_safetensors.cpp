// A .safetensors file of arbitrary bytes, opened as the weight loader opens
// it: the 8-byte header length, the JSON header, dtypes, shapes, offsets.
#include "base/error.hpp"
#include "runtime/loader/safetensors.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const hive::fuzz::ScratchDir dir;
  const auto path = dir.write("model.safetensors", hive::fuzz::text(data, size));
  try {
    const hive::SafetensorsFile file(path);
    // Every tensor's bytes must lie inside the file: read them all.
    uint8_t sum = 0;
    for (const auto& [name, tensor] : file.tensors()) {
      const auto* bytes = static_cast<const uint8_t*>(tensor.data);
      for (size_t i = 0; i < tensor.nbytes(); ++i) sum ^= bytes[i];
    }
    volatile uint8_t keep = sum;
    (void)keep;
  } catch (const hive::Error&) {
    // A clear error naming the file is the expected answer to a bad file.
  }
  return 0;
}
