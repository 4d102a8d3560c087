#pragma once
// GGUF files assembled byte by byte (the layout in runtime/loader/gguf_file.hpp),
// for tests of what a reader makes of a file, good or bad.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace hive::test {

inline std::string le32(uint32_t value) {
  return std::string(reinterpret_cast<char*>(&value), 4);
}
inline std::string le64(uint64_t value) {
  return std::string(reinterpret_cast<char*>(&value), 8);
}
inline std::string gguf_string(const std::string& text) {
  return le64(text.size()) + text;
}

// A GGUF file assembled from encoded parts (the layout in gguf_file.hpp).
struct GgufBytes {
  std::string magic = "GGUF";
  uint32_t version = 3;
  std::vector<std::string> metadata;  // encoded key, type, value
  std::vector<std::string> infos;     // encoded tensor infos
  uint32_t alignment = 32;            // the padding before the data section
  std::string data;

  void add_u32(const std::string& key, uint32_t value) {
    metadata.push_back(gguf_string(key) + le32(4) + le32(value));
  }
  void add_f32(const std::string& key, float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    metadata.push_back(gguf_string(key) + le32(6) + le32(bits));
  }
  void add_string(const std::string& key, const std::string& value) {
    metadata.push_back(gguf_string(key) + le32(8) + gguf_string(value));
  }
  // An f32 tensor of zeros, appended to the data at the next aligned offset.
  void add_f32_tensor(const std::string& name, std::vector<uint64_t> dims) {
    uint64_t numel = 1;
    for (uint64_t dim : dims) numel *= dim;
    data.append((alignment - data.size() % alignment) % alignment, '\0');
    add_tensor(name, std::move(dims), 0, data.size());
    data.append(numel * 4, '\0');
  }
  void add_tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type,
                  uint64_t offset) {
    std::string info = gguf_string(name) + le32(static_cast<uint32_t>(dims.size()));
    for (uint64_t dim : dims) info += le64(dim);
    infos.push_back(info + le32(type) + le64(offset));
  }
  std::string bytes() const {
    std::string out = magic + le32(version) + le64(infos.size()) + le64(metadata.size());
    for (const std::string& entry : metadata) out += entry;
    for (const std::string& info : infos) out += info;
    out.append((alignment - out.size() % alignment) % alignment, '\0');
    return out + data;
  }
};

}  // namespace hive::test
