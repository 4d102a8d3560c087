#include "runtime/loader/weight_store.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "base/error.hpp"
#include "base/json_reader.hpp"
#include "runtime/loader/gguf_config.hpp"
#include "runtime/loader/gguf_tensor_names.hpp"

namespace hive {

WeightStore::WeightStore(const std::filesystem::path& model_dir) : dir_(model_dir) {
  open_directory();
}

WeightStore::WeightStore(const std::filesystem::path& model, const ModelConfig& config,
                         const LoadOptions& options)
    : dir_(model) {
  if (!is_gguf_model(model)) {
    open_directory();
    const std::string fp8 = first_fp8();
    check(fp8.empty() || config.fp8_block_weights, dir_.string(), ": tensor ", fp8,
          " is FP8, but config.json has no quantization_config {quant_method: \"fp8\", "
          "weight_block_size: [",
          kFp8Block, ", ", kFp8Block, "]} to say how it is scaled");
    return;
  }
  gguf_ = std::make_unique<GgufFile>(model);
  gguf_weights_ = map_gguf_weights(*gguf_, config, options.dequantize);
  index_ = std::move(gguf_weights_.tensors);  // file_names and copies stay
}

void WeightStore::open_directory() {
  namespace fs = std::filesystem;
  const fs::path& model_dir = dir_;
  check(fs::is_directory(model_dir), model_dir.string(), ": not a directory");
  const fs::path index_path = model_dir / "model.safetensors.index.json";
  const fs::path single_path = model_dir / "model.safetensors";
  if (fs::exists(index_path)) {
    const nlohmann::json index = read_json_file(index_path);
    check(index.is_object() && index.contains("weight_map") && index["weight_map"].is_object(),
          index_path.string(), ": needs an object 'weight_map'");
    std::map<std::string, std::string> weight_map;
    std::set<std::string> shards;
    for (const auto& [name, file] : index["weight_map"].items()) {
      check(file.is_string(), index_path.string(), ": weight_map['", name, "'] must be a string");
      const auto shard = file.get<std::string>();
      check(fs::path(shard).filename() == shard, index_path.string(), ": shard '", shard,
            "' must be a file name inside the model directory");
      weight_map[name] = shard;
      shards.insert(shard);
    }
    std::map<std::string, const SafetensorsFile*> by_shard;
    for (const auto& shard : shards) {
      files_.push_back(std::make_unique<SafetensorsFile>(model_dir / shard));
      by_shard[shard] = files_.back().get();
    }
    for (const auto& [name, shard] : weight_map) {
      const auto& tensors = by_shard[shard]->tensors();
      const auto it = tensors.find(name);
      check(it != tensors.end(), index_path.string(), ": tensor '", name, "' is mapped to ", shard,
            " but that file does not contain it");
      index_[name] = it->second;
    }
  } else {
    check(fs::exists(single_path), model_dir.string(),
          ": no model.safetensors or model.safetensors.index.json");
    files_.push_back(std::make_unique<SafetensorsFile>(single_path));
    index_ = files_.back()->tensors();
  }
  attach_fp8_scales();
}

void WeightStore::attach_fp8_scales() {
  const std::string dir = dir_.string();
  const std::string suffix = "_scale_inv";
  for (auto& [name, t] : index_) {
    if (t.dtype != DType::f8_e4m3) continue;
    check(t.ndim == 2, dir, ": tensor '", name, "' is f8_e4m3 with shape ", t.shape_text(),
          "; FP8 tensors must be 2-d weights");
    const auto it = index_.find(name + suffix);
    check(it != index_.end(), dir, ": tensor '", name, "' is f8_e4m3 but '", name, suffix,
          "' (its ", kFp8Block, " x ", kFp8Block, " block scales) is missing");
    const Tensor& scales = it->second;
    const int64_t rows = (t.shape[0] + kFp8Block - 1) / kFp8Block;
    const int64_t cols = (t.shape[1] + kFp8Block - 1) / kFp8Block;
    check(scales.dtype == DType::f32 && scales.ndim == 2 && scales.shape[0] == rows &&
              scales.shape[1] == cols,
          dir, ": tensor '", name, suffix, "' has shape ", scales.shape_text(), ", expected [",
          rows, ", ", cols, "] f32: one scale per ", kFp8Block, " x ", kFp8Block, " block of '",
          name, "' ", t.shape_text());
    t.block_scales = scales.as<float>();
  }
  for (auto it = index_.begin(); it != index_.end();) {
    const std::string& name = it->first;
    const bool scale = name.size() > suffix.size() && name.ends_with(suffix);
    if (!scale) {
      ++it;
      continue;
    }
    const std::string weight = name.substr(0, name.size() - suffix.size());
    const auto scaled = index_.find(weight);
    check(scaled != index_.end() && scaled->second.dtype == DType::f8_e4m3, dir, ": tensor '", name,
          "' scales '", weight, "', which is ",
          scaled == index_.end() ? std::string("missing")
                                 : "not f8_e4m3 (" + scaled->second.shape_string() + ")");
    scale_bytes_ += it->second.nbytes();
    it = index_.erase(it);
  }
}

Tensor WeightStore::get(const std::string& name) const {
  const auto it = index_.find(name);
  check(it != index_.end(), dir_.string(), ": missing tensor ", file_name(name));
  return it->second;
}

Tensor WeightStore::get_shaped(const std::string& name,
                               std::initializer_list<int64_t> shape) const {
  Tensor t = get(name);
  // The expected shape, in the tensor's dtype, as Tensor writes shapes.
  std::string expected = "[";
  for (const int64_t d : shape) expected += (expected.size() > 1 ? ", " : "") + std::to_string(d);
  expected += "] " + std::string(dtype_name(t.dtype));
  check(t.shape_string() == expected, dir_.string(), ": tensor ", file_name(name), " has shape ",
        t.shape_text(), ", expected ", expected);
  return t;
}

Tensor WeightStore::get(const std::string& name, std::initializer_list<int64_t> shape) const {
  const Tensor t = get_shaped(name, shape);
  check(is_float(t.dtype), dir_.string(), ": tensor ", file_name(name), " has dtype ",
        dtype_name(t.dtype), "; this weight must be f32, f16 or bf16");
  return t;
}

Tensor WeightStore::get_matrix(const std::string& name,
                               std::initializer_list<int64_t> shape) const {
  const Tensor t = get_shaped(name, shape);
  check(is_float(t.dtype) || is_quantized(t.dtype) || t.dtype == DType::f8_e4m3, dir_.string(),
        ": tensor ", file_name(name), " has dtype ", dtype_name(t.dtype),
        "; weights must be f32, f16, bf16, quantized or f8_e4m3");
  return t;
}

std::string WeightStore::first_quantized() const {
  for (const auto& [name, t] : index_)
    if (is_quantized(t.dtype))
      return file_name(name) + " (" + std::string(dtype_name(t.dtype)) + ")";
  return "";
}

std::string WeightStore::first_fp8() const {
  for (const auto& [name, t] : index_)
    if (t.dtype == DType::f8_e4m3) return file_name(name);
  return "";
}

std::string WeightStore::file_name(const std::string& name) const {
  if (!gguf_) return "'" + name + "'";
  // The file's name first; shapes in messages stay Hugging Face's (ggml's
  // dims reversed).
  const auto it = gguf_weights_.file_names.find(name);
  return "'" + (it != gguf_weights_.file_names.end() ? it->second : gguf_tensor_name(name)) +
         "' (" + name + ")";
}

size_t WeightStore::total_bytes() const {
  size_t total = scale_bytes_;
  for (const auto& [name, t] : index_) total += t.nbytes();
  return total;
}

}  // namespace hive
