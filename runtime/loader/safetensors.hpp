#pragma once
// Reading .safetensors files: memory-mapped, validated before use.
//
//   [u64 LE header_len][header_len bytes of JSON][data section ............]
//   JSON: {"name": {"dtype": "BF16", "shape": [r, c], "data_offsets": [b, e]}, ...}
//   Offsets are relative to the data section; tensors may not overlap.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/tensor.hpp"
#include "runtime/loader/mapped_file.hpp"

namespace hive {

class SafetensorsFile {
 public:
  // Maps the file and checks every header entry; throws hive::Error naming
  // the file and the problem.
  explicit SafetensorsFile(const std::filesystem::path& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const std::map<std::string, Tensor>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  void parse_header(size_t header_len);

  std::filesystem::path path_;
  MappedFile file_;
  std::map<std::string, Tensor> tensors_;  // views into the mapping, or into realigned_
  std::map<std::string, std::string> metadata_;
  // Copies of tensors whose bytes in the file are not aligned to their
  // element size (the format does not require it; the kernels read whole
  // elements).
  std::vector<std::unique_ptr<char[]>> realigned_;
};

// Writes tensors (host memory) to a .safetensors file; used by tools and tests.
void write_safetensors(const std::filesystem::path& path,
                       const std::map<std::string, Tensor>& tensors);

}  // namespace hive
