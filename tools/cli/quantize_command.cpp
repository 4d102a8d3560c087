// hive quantize: a Hugging Face safetensors directory to one GGUF file
// (runtime/loader/gguf_quantize.hpp), one line per tensor with its type, and
// the reason wherever a row did not fit the type llama.cpp's rules chose.
#include <cstdio>
#include <string>

#include "base/error.hpp"
#include "runtime/loader/gguf_quantize.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"

namespace hive::cli {
namespace {

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += str_cat(i ? ", " : "", dims[i]);
  return text + "]";
}

double mib(uint64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

}  // namespace

int run_quantize(const std::vector<std::string>& argv) {
  const Args args(argv, {"--model", "--type", "--out"}, {"--force"});
  QuantizeOptions options;
  options.model_dir = args.require("--model");
  const std::string type = args.require("--type");
  const auto mix = parse_quant_mix(type);
  check(mix.has_value(), "--type must be q8_0, q4_0 or q4_k_m (got '", type, "')");
  options.mix = *mix;
  options.out = args.require("--out");
  options.force = args.has("--force");
  const QuantizeReport report = quantize_model(options, [](const QuantizedTensor& t) {
    std::printf("%-34s %-22s %s%s%s\n", t.name.c_str(), dims_text(t.dims).c_str(),
                std::string(ggml_type_info(t.type).name).c_str(),
                t.fallback.empty() ? "" : "  fallback: ", t.fallback.c_str());
  });
  for (const std::string& note : report.notes) std::printf("note: %s\n", note.c_str());
  std::printf("wrote %s: %s, %zu tensors, %.2f MiB (weights were %.2f MiB)\n", options.out.c_str(),
              std::string(quant_mix_name(options.mix)).c_str(), report.tensors.size(),
              mib(report.file_bytes), mib(report.source_bytes));
  return 0;
}

}  // namespace hive::cli
