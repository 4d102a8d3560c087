// gguf_dequantize_dump FILE.gguf OUT.f32: every tensor of the file, in file
// order, dequantized by Hive's reference (kernels/quant/dequantize.hpp) and
// written as raw little-endian f32, for test_quantize_gguf.py to compare
// with gguf-py's dequantization bit for bit.
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/quant/dequantize.hpp"
#include "runtime/loader/gguf_file.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: gguf_dequantize_dump FILE.gguf OUT.f32\n");
    return 2;
  }
  try {
    const hive::GgufFile file(argv[1]);
    std::FILE* out = std::fopen(argv[2], "wb");
    if (!out) throw std::runtime_error(std::string("cannot write ") + argv[2]);
    for (const hive::GgufTensor& t : file.tensors()) {
      std::vector<float> values(static_cast<size_t>(t.numel));
      hive::dequantize_to_f32(t.type, t.data, t.numel, values.data());
      if (std::fwrite(values.data(), sizeof(float), values.size(), out) != values.size())
        throw std::runtime_error(std::string("cannot write ") + argv[2]);
    }
    if (std::fclose(out) != 0) throw std::runtime_error(std::string("cannot write ") + argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gguf_dequantize_dump: %s\n", e.what());
    return 1;
  }
  return 0;
}
