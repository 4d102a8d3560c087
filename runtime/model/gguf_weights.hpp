#pragma once
// A GGUF model's tensors under the Hugging Face names bind_weights asks for
// (gguf_tensor_names.hpp). F32, F16 and BF16 tensors are views into the
// mapping, as safetensors ones are; an expert stack is one view per expert.
// Copies are made only where the file's bytes cannot serve:
//   - Llama's q and k rows, which llama.cpp's converter reorders into GGML's
//     rope pairs (row h*d + 2i + j holds Hugging Face row h*d + j*d/2 + i),
//     are put back into Hugging Face's order;
//   - quantized tensors (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) are dequantized at
//     load into bf16, for now: the matmuls take f32, f16 or bf16 weights.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "kernels/tensor.hpp"
#include "runtime/model/gguf_file.hpp"
#include "runtime/model/model_config.hpp"

namespace hive {

struct GgufWeights {
  std::map<std::string, Tensor> tensors;          // by Hugging Face name
  std::map<std::string, std::string> file_names;  // Hugging Face name -> GGUF name, for messages
  std::vector<std::vector<std::byte>> copies;     // what the converted tensors point into
};

// `config` must be gguf_model_config(file). Throws hive::Error naming the
// file and the tensor for a tensor whose shape does not fit the config.
GgufWeights map_gguf_weights(const GgufFile& file, const ModelConfig& config);

}  // namespace hive
