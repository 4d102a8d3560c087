#pragma once
// All tensors of a checkpoint, by Hugging Face name: a directory with one
// model.safetensors or shards listed in model.safetensors.index.json, or a
// GGUF file (gguf_weights.hpp), whose tensors are renamed and errors then
// name the file's own tensor names.
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/loader/gguf_file.hpp"
#include "runtime/loader/gguf_weights.hpp"
#include "runtime/loader/model_config.hpp"
#include "runtime/loader/safetensors.hpp"

namespace hive {

// How a model's weights are loaded.
struct LoadOptions {
  // A GGUF's quantized tensors (Q8_0 .. Q6_K, Q5_0, Q5_1) dequantized at
  // load into bf16 copies, instead of multiplied as the file's blocks: bf16's memory and
  // bytes per token, the quantized matmuls' exact reference and their
  // benchmark's baseline (`--dequantize`). No effect on other files.
  bool dequantize = false;
};

class WeightStore {
 public:
  explicit WeightStore(const std::filesystem::path& model_dir);
  // A directory, or a GGUF file (is_gguf_model) whose config is `config`.
  WeightStore(const std::filesystem::path& model, const ModelConfig& config,
              const LoadOptions& options = {});

  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  // The named tensor; throws naming the directory when it is missing.
  Tensor get(const std::string& name) const;
  // Same, and checks the shape: "tensor 'x' has shape [4, 8], expected [8, 8]",
  // and that it is f32, f16 or bf16.
  Tensor get(const std::string& name, std::initializer_list<int64_t> shape) const;
  // A weight only a matmul (or the embedding) reads: it may also be
  // quantized (a GGUF's blocks), which the CPU backend multiplies as they
  // are, or f8_e4m3 with its block scales attached (Tensor::block_scales).
  Tensor get_matrix(const std::string& name, std::initializer_list<int64_t> shape) const;
  // The first quantized tensor's name in the file, for messages; empty when none.
  std::string first_quantized() const;
  // The same for an FP8 checkpoint's f8_e4m3 weights.
  std::string first_fp8() const;

  size_t size() const { return index_.size(); }
  const std::map<std::string, Tensor>& tensors() const { return index_; }
  size_t total_bytes() const;

 private:
  void open_directory();
  // Pairs every f8_e4m3 weight `x` with its block scales `x_scale_inv`
  // (Tensor::block_scales), checked, and takes the scales out of the index.
  void attach_fp8_scales();
  // The tensor's name in the file, quoted, for messages.
  std::string file_name(const std::string& name) const;
  Tensor get_shaped(const std::string& name, std::initializer_list<int64_t> shape) const;

  std::filesystem::path dir_;  // the directory or the GGUF file
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::unique_ptr<GgufFile> gguf_;
  GgufWeights gguf_weights_;  // the renamed tensors and their copies
  std::map<std::string, Tensor> index_;
  size_t scale_bytes_ = 0;  // the FP8 weights' scales, attached to them
};

}  // namespace hive
