#include "runtime/model/gguf_weights.hpp"

#include <cstring>

#include "kernels/dtype.hpp"
#include "kernels/error.hpp"
#include "kernels/quant/dequantize.hpp"
#include "runtime/model/gguf_tensor_names.hpp"

namespace hive {

namespace {

// ggml lists dimensions fastest first; Hugging Face (and Tensor) slowest first.
std::vector<int64_t> row_major_shape(const GgufTensor& t) {
  return {t.dims.rbegin(), t.dims.rend()};
}

// The tensor's elements in file order, as `dtype`: the file's own bytes
// when dtype is its type, else block types dequantized one row at a time
// (each row is whole blocks) and rounded to bf16.
std::vector<std::byte> file_order_copy(const GgufTensor& t, DType dtype) {
  std::vector<std::byte> bytes(static_cast<size_t>(dtype_bytes(dtype, t.numel)));
  if (dtype == ggml_dtype(t.type)) {
    std::memcpy(bytes.data(), t.data, bytes.size());
    return bytes;
  }
  const int64_t row = t.dims.empty() ? 1 : t.dims[0];
  const int64_t rows = t.numel / row;
  const uint64_t file_row_bytes = t.nbytes / static_cast<uint64_t>(rows);
  std::vector<float> widened(static_cast<size_t>(row));
  auto* out = reinterpret_cast<uint16_t*>(bytes.data());
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_to_f32(t.type, static_cast<const std::byte*>(t.data) + r * file_row_bytes, row,
                      widened.data());
    for (int64_t i = 0; i < row; ++i)
      out[r * row + i] = f32_to_bf16(widened[static_cast<size_t>(i)]);
  }
  return bytes;
}

// Undoes llama.cpp's Llama q/k permutation: unit g = h*d + 2i + j of the
// file (a row of a weight, an element of a bias) is Hugging Face's unit
// h*d + j*d/2 + i.
std::vector<std::byte> unpermute_rope_units(const std::vector<std::byte>& file, int64_t units,
                                            int64_t heads) {
  const int64_t d = units / heads;
  const size_t unit_bytes = file.size() / static_cast<size_t>(units);
  std::vector<std::byte> out(file.size());
  for (int64_t g = 0; g < units; ++g) {
    const int64_t h = g / d, r = g % d;
    const int64_t hf = h * d + (r % 2) * (d / 2) + r / 2;
    std::memcpy(out.data() + static_cast<size_t>(hf) * unit_bytes,
                file.data() + static_cast<size_t>(g) * unit_bytes, unit_bytes);
  }
  return out;
}

class Mapper {
 public:
  Mapper(const GgufFile& file, const ModelConfig& config, bool dequantize, GgufWeights& out)
      : file_(file), config_(config), dequantize_(dequantize), out_(out) {}

  void map(const GgufTensor& t) {
    const bool mixtral = config_.architecture == Architecture::mixtral;
    const std::optional<HfTensorName> name = hf_tensor_name(t.name, mixtral);
    if (!name) return;  // rope_freqs.weight (read by the config) or unused
    const bool permuted =
        name->rope_rows && (config_.architecture == Architecture::llama || mixtral);
    const std::vector<int64_t> shape = row_major_shape(t);
    if (name->experts) return map_experts(t, name->name, shape);
    Tensor tensor = permuted ? unpermuted(t, name->name, shape) : as_tensor(t, shape);
    // Qwen2-MoE's shared-expert gate is [hidden] in GGUF, [1, hidden] in Hugging Face.
    if (name->name.ends_with("shared_expert_gate.weight") && tensor.ndim == 1)
      tensor = tensor.reshape({1, tensor.shape[0]});
    add(name->name, t.name, tensor);
  }

 private:
  // The dtype the model gets the tensor in: the file's, or bf16 for a
  // quantized one when dequantizing.
  DType loaded_dtype(const GgufTensor& t) const {
    const DType dtype = ggml_dtype(t.type);
    return is_quantized(dtype) && dequantize_ ? DType::bf16 : dtype;
  }

  Tensor as_tensor(const GgufTensor& t, const std::vector<int64_t>& shape) {
    const DType dtype = loaded_dtype(t);
    if (dtype == ggml_dtype(t.type))
      return Tensor::view(const_cast<void*>(t.data), dtype, shape.data(),
                          static_cast<int>(shape.size()));
    out_.copies.push_back(file_order_copy(t, DType::bf16));
    return Tensor::view(out_.copies.back().data(), DType::bf16, shape.data(),
                        static_cast<int>(shape.size()));
  }

  Tensor unpermuted(const GgufTensor& t, const std::string& hf, const std::vector<int64_t>& shape) {
    const bool query = hf.find("q_proj") != std::string::npos;
    const int64_t heads = query ? config_.num_heads : config_.num_kv_heads;
    const int64_t units = shape.empty() ? 0 : shape[0];
    check(units == heads * config_.head_dim, file_.path().string(), ": tensor '", t.name, "' has ",
          units, " rows, expected ", query ? "heads" : "kv heads", " x head_dim = ", heads, " x ",
          config_.head_dim);
    // A row of a block type is whole blocks: its bytes move as they are.
    const DType dtype = loaded_dtype(t);
    out_.copies.push_back(unpermute_rope_units(file_order_copy(t, dtype), units, heads));
    return Tensor::view(out_.copies.back().data(), dtype, shape.data(),
                        static_cast<int>(shape.size()));
  }

  // [experts, rows, cols] -> one [rows, cols] view per expert.
  void map_experts(const GgufTensor& t, const std::string& pattern,
                   const std::vector<int64_t>& shape) {
    check(shape.size() == 3 && shape[0] == config_.num_experts, file_.path().string(), ": tensor '",
          t.name, "' must stack ", config_.num_experts,
          " experts as [experts, rows, cols] (ggml dims reversed; got ", shape.size(),
          " dimensions, ", shape.empty() ? 0 : shape[0], " first)");
    const Tensor all = as_tensor(t, shape);
    const size_t brace = pattern.find("{}");
    for (int64_t e = 0; e < shape[0]; ++e) {
      std::string name = pattern;
      name.replace(brace, 2, std::to_string(e));
      const Tensor one = all.rows(e, 1).reshape({shape[1], shape[2]});
      add(name, t.name + " (expert " + std::to_string(e) + ")", one);
    }
  }

  void add(const std::string& hf, const std::string& gguf, const Tensor& tensor) {
    out_.tensors[hf] = tensor;
    out_.file_names[hf] = gguf;
  }

  const GgufFile& file_;
  const ModelConfig& config_;
  bool dequantize_;
  GgufWeights& out_;
};

}  // namespace

GgufWeights map_gguf_weights(const GgufFile& file, const ModelConfig& config, bool dequantize) {
  GgufWeights out;
  Mapper mapper(file, config, dequantize, out);
  for (const GgufTensor& t : file.tensors()) mapper.map(t);
  return out;
}

}  // namespace hive
