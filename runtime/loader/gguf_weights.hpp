#pragma once
// A GGUF model's tensors under the Hugging Face names bind_weights asks for
// (gguf_tensor_names.hpp). Every tensor is a view into the mapping, as
// safetensors ones are, quantized ones (Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K,
// Q6_K) too, with their block dtype (kernels/dtype.hpp) and logical shape
// [rows, cols]; an expert stack is one view per expert. Copies are made only where
// the file's bytes cannot serve:
//   - Llama's q and k rows, which llama.cpp's converter reorders into GGML's
//     rope pairs (row h*d + 2i + j holds Hugging Face row h*d + j*d/2 + i),
//     are put back into Hugging Face's order (a quantized row is whole
//     blocks, so its bytes move unchanged);
//   - with `dequantize`, quantized tensors are dequantized at load into bf16
//     (the exact reference for the quantized matmuls, and their benchmark's
//     baseline: bf16 memory and bytes per token).
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "kernels/quant/ggml_type.hpp"
#include "kernels/tensor.hpp"
#include "runtime/loader/gguf_file.hpp"
#include "runtime/loader/model_config.hpp"

namespace hive {

struct GgufWeights {
  std::map<std::string, Tensor> tensors;          // by Hugging Face name
  std::map<std::string, std::string> file_names;  // Hugging Face name -> GGUF name, for messages
  std::vector<std::vector<std::byte>> copies;     // what the converted tensors point into
};

// `config` must be gguf_model_config(file). Throws hive::Error naming the
// file and the tensor for a tensor whose shape does not fit the config.
GgufWeights map_gguf_weights(const GgufFile& file, const ModelConfig& config,
                             bool dequantize = false);

}  // namespace hive
