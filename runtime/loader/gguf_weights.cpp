#include "runtime/loader/gguf_weights.hpp"

#include <cstring>
#include <map>

#include "base/error.hpp"
#include "kernels/dtype.hpp"
#include "kernels/quant/dequantize.hpp"
#include "runtime/loader/gguf_tensor_names.hpp"

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

// The layer of "blk.N.<part>", or -1 when `name` is not that.
int64_t layer_of(const std::string& name, std::string_view part) {
  const std::string_view view = name;
  if (!view.starts_with("blk.") || !view.ends_with(part)) return -1;
  const std::string_view digits = view.substr(4, view.size() - 4 - part.size());
  if (digits.empty() || digits.size() > 9) return -1;
  int64_t layer = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return -1;
    layer = layer * 10 + (c - '0');
  }
  return layer;
}

constexpr std::string_view kKB = ".attn_k_b.weight";
constexpr std::string_view kVB = ".attn_v_b.weight";

class Mapper {
 public:
  Mapper(const GgufFile& file, const ModelConfig& config, bool dequantize, GgufWeights& out)
      : file_(file), config_(config), dequantize_(dequantize), out_(out) {}

  void map(const GgufTensor& t) {
    const bool mixtral = config_.architecture == Architecture::mixtral;
    if (const int64_t layer = layer_of(t.name, kKB); config_.mla && layer >= 0)
      return void(kv_b_parts_[layer].first = &t);
    if (const int64_t layer = layer_of(t.name, kVB); config_.mla && layer >= 0)
      return void(kv_b_parts_[layer].second = &t);
    const std::optional<HfTensorName> name = hf_tensor_name(t.name, config_.architecture);
    if (!name) return;  // rope_freqs.weight (read by the config) or unused
    const bool permuted =
        name->rope_rows && (config_.architecture == Architecture::llama || mixtral);
    const std::vector<int64_t> shape = row_major_shape(t);
    if (name->experts) return map_experts(t, name->name, shape);
    // MLA's projections are float (the absorbed matrices are built from them).
    const bool mla = config_.mla && name->name.find(".self_attn.") != std::string::npos;
    Tensor tensor = permuted ? unpermuted(t, name->name, shape) : as_tensor(t, shape, mla);
    // Qwen2-MoE's shared-expert gate is [hidden] in GGUF, [1, hidden] in Hugging Face.
    if (name->name.ends_with("shared_expert_gate.weight") && tensor.ndim == 1)
      tensor = tensor.reshape({1, tensor.shape[0]});
    add(name->name, t.name, tensor);
  }

  // DeepSeek's kv_b_proj [heads * (nope + v), rank], head by head its nope
  // k rows then its v rows, from the converter's split of it: attn_k_b
  // [heads, rank, nope] (each head's k rows transposed) and attn_v_b
  // [heads, v, rank]. A copy, in the parts' float dtype (bf16 for a
  // quantized part or when they differ).
  void join_kv_b() {
    const MlaConfig* m = config_.mla ? &*config_.mla : nullptr;
    for (const auto& [layer, parts] : kv_b_parts_) {
      const std::string prefix = "blk." + std::to_string(layer);
      check(parts.first && parts.second, file_.path().string(), ": missing tensor '", prefix,
            parts.first ? kVB : kKB, "' (attn_k_b and attn_v_b come as a pair)");
      const int64_t heads = config_.num_heads, rank = m->kv_lora_rank;
      const int64_t nope = m->qk_nope_head_dim, v = m->v_head_dim;
      expect_shape(*parts.first, {heads, rank, nope}, "[heads, kv_lora_rank, qk_nope_head_dim]");
      expect_shape(*parts.second, {heads, v, rank}, "[heads, v_head_dim, kv_lora_rank]");
      DType dtype = loaded_dtype(*parts.first, true);
      if (dtype != loaded_dtype(*parts.second, true)) dtype = DType::bf16;
      const std::vector<std::byte> k = file_order_copy(*parts.first, dtype);
      const std::vector<std::byte> vb = file_order_copy(*parts.second, dtype);
      const size_t unit = dtype_size(dtype);
      std::vector<std::byte> joined(k.size() + vb.size());
      const auto at = [&](int64_t row, int64_t col) {
        return joined.data() + static_cast<size_t>(row * rank + col) * unit;
      };
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t d = 0; d < nope; ++d)
          for (int64_t a = 0; a < rank; ++a)
            std::memcpy(at(h * (nope + v) + d, a),
                        k.data() + static_cast<size_t>((h * rank + a) * nope + d) * unit, unit);
        std::memcpy(at(h * (nope + v) + nope, 0),
                    vb.data() + static_cast<size_t>(h * v * rank) * unit,
                    static_cast<size_t>(v * rank) * unit);
      }
      out_.copies.push_back(std::move(joined));
      const std::vector<int64_t> shape = {heads * (nope + v), rank};
      add("model.layers." + std::to_string(layer) + ".self_attn.kv_b_proj.weight",
          prefix + std::string(kKB) + " + " + prefix + std::string(kVB),
          Tensor::view(out_.copies.back().data(), dtype, shape.data(), 2));
    }
  }

 private:
  void expect_shape(const GgufTensor& t, const std::vector<int64_t>& want, const char* what) {
    const std::vector<int64_t> got = row_major_shape(t);
    std::string shape;
    for (const int64_t d : got) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    check(got == want, file_.path().string(), ": tensor '", t.name, "' must be ", what, " = [",
          want[0], ", ", want[1], ", ", want[2], "] (ggml dims reversed; got [", shape, "])");
  }

  // The dtype the model gets the tensor in: the file's, or bf16 for a
  // quantized one when dequantizing (or when it must be float).
  DType loaded_dtype(const GgufTensor& t, bool need_float = false) const {
    const DType dtype = ggml_dtype(t.type);
    return is_quantized(dtype) && (dequantize_ || need_float) ? DType::bf16 : dtype;
  }

  Tensor as_tensor(const GgufTensor& t, const std::vector<int64_t>& shape,
                   bool need_float = false) {
    const DType dtype = loaded_dtype(t, need_float);
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
  std::map<int64_t, std::pair<const GgufTensor*, const GgufTensor*>> kv_b_parts_;  // k_b, v_b
};

}  // namespace

GgufWeights map_gguf_weights(const GgufFile& file, const ModelConfig& config, bool dequantize) {
  GgufWeights out;
  Mapper mapper(file, config, dequantize, out);
  for (const GgufTensor& t : file.tensors()) mapper.map(t);
  mapper.join_kv_b();
  return out;
}

}  // namespace hive
