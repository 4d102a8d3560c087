#pragma once
// `hive quantize`: a Hugging Face safetensors directory to one GGUF file in
// llama.cpp's layout (the reverse of gguf_weights / gguf_config /
// gguf_tokenizer), its weights quantized by gguf_quant_mix's rules:
//
//   names       model.layers.N.self_attn.q_proj.weight -> blk.N.attn_q.weight, ...
//               (gguf_tensor_names), lm_head dropped when tied
//   experts     stacked per layer and projection: [experts, rows, cols]
//   Llama q/k   rows (and biases) from rotate-half order to GGML's rope
//               pairs: file row h*d + 2i + j holds Hugging Face row
//               h*d + j*d/2 + i (Llama, Mistral, Mixtral; Qwen keeps its order)
//   Llama 3     rope scaling as rope_freqs.weight
//   values      widened to f32 (bf16, f16, f32 sources), then quantized row
//               by row with kernels/quant's quantizers, one tensor in memory
//               at a time
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "kernels/quant/ggml_type.hpp"
#include "runtime/loader/gguf_quant_mix.hpp"

namespace hive {

struct QuantizeOptions {
  std::filesystem::path model_dir;
  QuantMix mix = QuantMix::q8_0;
  std::filesystem::path out;
  bool force = false;  // replace an existing `out`
};

struct QuantizedTensor {
  std::string name;  // GGUF name
  GgmlType type = GgmlType::f32;
  std::vector<int64_t> dims;  // ggml order
  uint64_t bytes = 0;
  std::string fallback;  // gguf_quant_mix's reason, when the rules' type did not fit
};

struct QuantizeReport {
  std::vector<QuantizedTensor> tensors;  // in file order
  uint64_t source_bytes = 0;
  uint64_t file_bytes = 0;
  bool tokenizer = false;  // the directory had a tokenizer.json, written
  std::vector<std::string> notes;  // what the file does not carry over
};

// Writes options.out (via out.tmp, renamed at the end: never half a file).
// Throws hive::Error before anything is written for an existing `out`
// without `force`, an unsupported architecture, rope scaling, tokenizer or
// dtype, or a tensor with no GGUF name; `progress` (optional) is called
// after each tensor is written.
QuantizeReport quantize_model(const QuantizeOptions& options,
                              const std::function<void(const QuantizedTensor&)>& progress = {});

}  // namespace hive
