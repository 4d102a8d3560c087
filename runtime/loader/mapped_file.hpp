#pragma once
// A file mapped read-only for the life of the object: the checkpoint
// readers (safetensors, GGUF) hand out tensors that are views into it.
#include <cstddef>
#include <filesystem>

namespace hive {

class MappedFile {
 public:
  // Throws hive::Error naming the path when it cannot be opened or mapped.
  // An empty file maps to no bytes (data() is null).
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const char* data() const { return static_cast<const char*>(mapping_); }
  size_t size() const { return size_; }

 private:
  void* mapping_ = nullptr;
  size_t size_ = 0;
};

}  // namespace hive
