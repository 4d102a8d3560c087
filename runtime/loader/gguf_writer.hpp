#pragma once
// Writing GGUF files: version 3, little-endian, data aligned to 32 bytes,
// the layout gguf_file.hpp reads (and llama.cpp, and gguf-py):
//
//   ["GGUF"][u32 3][u64 tensor_count][u64 metadata_count]
//   metadata, in the order added: [string key][u32 value type][value]
//   tensor infos, in the order added: [string name][u32 n_dims]
//                 [n_dims x u64 dim][u32 ggml type][u64 offset]
//   [zeros to a multiple of 32]
//   [tensor 0][zeros to 32][tensor 1][zeros to 32] ...
//
// Metadata and tensor infos are collected first; the tensors' bytes are then
// asked for one at a time while the file is written, so a model never has to
// be held quantized in memory. The file appears whole or not at all: it is
// written as PATH.tmp and renamed over PATH at the end.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/quant/ggml_type.hpp"
#include "runtime/loader/gguf_value.hpp"

namespace hive {

class GgufWriter {
 public:
  static constexpr uint32_t kAlignment = 32;

  // A scalar: uint8_t .. double, bool, std::string (gguf_type_of).
  template <class T>
  void add(std::string_view key, const T& value) {
    begin_entry(key, gguf_type_of<T>());
    put_value(value);
  }
  void add(std::string_view key, const char* value) { add(key, std::string(value)); }

  // An array of scalars of one type.
  template <class T>
  void add_array(std::string_view key, const std::vector<T>& values) {
    begin_entry(key, GgufValueType::array);
    put_number(static_cast<uint32_t>(gguf_type_of<T>()));
    put_number(static_cast<uint64_t>(values.size()));
    for (const T& v : values) put_value(v);
  }

  // dims in ggml order (dims[0] the row, a whole number of blocks of
  // `type`); throws naming the tensor otherwise, or for a name given twice.
  void add_tensor(const std::string& name, GgmlType type, const std::vector<int64_t>& dims);
  size_t tensor_count() const { return tensors_.size(); }
  uint64_t tensor_bytes(size_t index) const { return tensors_[index].nbytes; }

  // Writes the file; `tensor_data(i)` returns tensor i's bytes (exactly
  // tensor_bytes(i) of them), called in order. On any error PATH.tmp is
  // removed and the error, naming the path, is thrown.
  using TensorSource = std::function<std::vector<std::byte>(size_t index)>;
  void write(const std::filesystem::path& path, const TensorSource& tensor_data) const;

 private:
  struct TensorInfo {
    std::string name;
    GgmlType type;
    std::vector<int64_t> dims;
    uint64_t offset;
    uint64_t nbytes;
  };

  void begin_entry(std::string_view key, GgufValueType type);
  template <class T>
  void put_number(T value) {
    const auto* bytes = reinterpret_cast<const char*>(&value);  // little-endian targets only
    metadata_.append(bytes, sizeof(T));
  }
  void put_string(std::string_view text);
  template <class T>
  void put_value(const T& value) {
    if constexpr (std::is_same_v<T, std::string>)
      put_string(value);
    else if constexpr (std::is_same_v<T, bool>)
      put_number(static_cast<uint8_t>(value ? 1 : 0));
    else
      put_number(value);
  }

  std::string metadata_;  // the entries, serialised
  uint64_t metadata_count_ = 0;
  std::set<std::string, std::less<>> keys_;
  std::vector<TensorInfo> tensors_;
  std::set<std::string, std::less<>> tensor_names_;
  uint64_t data_bytes_ = 0;  // the data section so far, padded
};

}  // namespace hive
