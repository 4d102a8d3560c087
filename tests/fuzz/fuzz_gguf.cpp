// A .gguf file of arbitrary bytes, opened as the GGUF reader opens it: the
// header, every metadata value, the tensor infos and the data section; then
// every tensor is dequantized, which reads all of its bytes.
#include <string>
#include <vector>

#include "base/error.hpp"
#include "kernels/quant/dequantize.hpp"
#include "runtime/loader/gguf_file.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

// Reads every numeric, bool and string array through the getter of its type.
template <class... Ts>
void read_arrays_as(const hive::GgufFile& file) {
  for (const auto& [key, value] : file.metadata())
    if (value.type == hive::GgufValueType::array)
      ((value.element_type == hive::gguf_type_of<Ts>() ? (void)file.get_array<Ts>(key) : void()),
       ...);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const hive::fuzz::ScratchDir dir;
  const auto path = dir.write("model.gguf", hive::fuzz::text(data, size));
  try {
    const hive::GgufFile file(path);
    std::vector<float> values;
    for (const hive::GgufTensor& tensor : file.tensors()) {
      values.resize(static_cast<size_t>(tensor.numel));
      hive::dequantize_to_f32(tensor.type, tensor.data, tensor.numel, values.data());
    }
    read_arrays_as<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string,
                   uint64_t, int64_t, double>(file);
  } catch (const hive::Error&) {
    // A clear error naming the file is the expected answer to a bad file.
  }
  return 0;
}
