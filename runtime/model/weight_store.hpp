#pragma once
// All tensors of a Hugging Face checkpoint directory, by name: one
// model.safetensors, or shards listed in model.safetensors.index.json.
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model/safetensors.hpp"

namespace hive {

class WeightStore {
 public:
  explicit WeightStore(const std::filesystem::path& model_dir);

  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  // The named tensor; throws naming the directory when it is missing.
  Tensor get(const std::string& name) const;
  // Same, and checks the shape: "tensor 'x' has shape [4, 8], expected [8, 8]".
  Tensor get(const std::string& name, std::initializer_list<int64_t> shape) const;

  size_t size() const { return index_.size(); }
  const std::map<std::string, Tensor>& tensors() const { return index_; }
  size_t total_bytes() const;

 private:
  std::filesystem::path dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, Tensor> index_;
};

}  // namespace hive
