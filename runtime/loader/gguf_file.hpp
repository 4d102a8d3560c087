#pragma once
// Reading GGUF files (versions 2 and 3, little-endian): memory-mapped,
// validated before use.
//
//   ["GGUF"][u32 version][u64 tensor_count][u64 metadata_count]
//   metadata_count x [string key][u32 value type][value]     (gguf_value.hpp)
//   tensor_count   x [string name][u32 n_dims][n_dims x u64 dim]
//                    [u32 ggml type][u64 offset]
//   [padding to the alignment]
//   [data section ..... tensor at data + offset .....]
//
// The alignment is general.alignment (u32, a power of two; default 32); the
// data section starts at the first multiple of it after the tensor infos,
// and every tensor's offset is a multiple of it. dims are ggml's order:
// dims[0] is the row, contiguous in memory, a whole number of blocks.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/quant/ggml_type.hpp"
#include "runtime/loader/gguf_value.hpp"
#include "runtime/loader/mapped_file.hpp"

namespace hive {

class GgufCursor;

struct GgufTensor {
  std::string name;
  GgmlType type = GgmlType::f32;
  std::vector<int64_t> dims;  // ggml order: dims[0] varies fastest
  int64_t numel = 0;
  uint64_t offset = 0;  // from the start of the data section
  uint64_t nbytes = 0;
  const void* data = nullptr;  // into the mapping; any alignment the file gave it
};

class GgufFile {
 public:
  // Maps the file and checks the header, every metadata value and every
  // tensor info; throws hive::Error naming the file, the key or tensor, and
  // the problem.
  explicit GgufFile(const std::filesystem::path& path);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }

  const std::map<std::string, GgufValue, std::less<>>& metadata() const { return metadata_; }
  // The value of `key`, or nullptr.
  const GgufValue* find(std::string_view key) const;
  // The value of `key` as T (uint8_t .. double, bool, std::string); throws
  // naming the key when it is missing or holds another type.
  template <class T>
  T get(std::string_view key) const;
  // The array at `key`, whose elements must be of type T (as for get).
  template <class T>
  std::vector<T> get_array(std::string_view key) const;

  // In file order.
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  // The tensor named `name`, or nullptr.
  const GgufTensor* find_tensor(std::string_view name) const;

 private:
  void parse();
  void read_header(GgufCursor& cursor, uint64_t& tensor_count, uint64_t& metadata_count);
  void read_metadata(GgufCursor& cursor, uint64_t count);
  void read_alignment();
  void read_tensor_infos(GgufCursor& cursor, uint64_t count);
  void place_tensors(uint64_t data_start);
  const GgufValue& value_of(std::string_view key, GgufValueType expected) const;

  std::filesystem::path path_;
  MappedFile file_;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  std::map<std::string, GgufValue, std::less<>> metadata_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;  // name -> position in tensors_
};

}  // namespace hive
