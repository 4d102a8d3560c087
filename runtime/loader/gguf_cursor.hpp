#pragma once
// Reads a GGUF file's bytes front to back (gguf_file.cpp, gguf_value.cpp):
// every read is checked against the end of the file first, and a failure
// names the file, what was being read and where.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "base/error.hpp"
#include "runtime/loader/gguf_value.hpp"

namespace hive {

class GgufCursor {
 public:
  GgufCursor(const char* base, size_t size, std::string file)
      : base_(base), size_(size), file_(std::move(file)) {}

  const std::string& file() const { return file_; }
  size_t position() const { return position_; }
  size_t remaining() const { return size_ - position_; }

  // The next `bytes` bytes, which must lie inside the file.
  const char* take(uint64_t bytes, std::string_view what, std::string_view thing) {
    check(bytes <= remaining(), file_, ": ", what, ": ", thing, " of ", bytes, " bytes at offset ",
          position_, " runs past the end of the file (", size_, " bytes)");
    const char* at = base_ + position_;
    position_ += static_cast<size_t>(bytes);
    return at;
  }

  template <class T>
  T read(std::string_view what, std::string_view thing) {
    T value;
    std::memcpy(&value, take(sizeof(T), what, thing), sizeof(T));
    return value;
  }

  std::string read_string(std::string_view what) {
    const auto length = read<uint64_t>(what, "string length");
    const char* bytes = take(length, what, "string");
    return std::string(bytes, static_cast<size_t>(length));
  }

  // Checks that `count` items of at least `min_bytes` each could fit in what
  // is left of the file, before anything is allocated for them.
  void check_count(uint64_t count, uint64_t min_bytes, std::string_view what,
                   std::string_view items) const {
    check(count <= remaining() / min_bytes, file_, ": ", what, ": ", count, " ", items,
          " cannot fit in the ", remaining(), " bytes left in the file");
  }

 private:
  const char* base_;
  size_t size_;
  size_t position_ = 0;
  std::string file_;
};

// Reads one value of `type` at the cursor; `what` names it in errors
// ("metadata key 'general.name'"), `depth` counts enclosing arrays.
GgufValue read_gguf_value(GgufCursor& cursor, GgufValueType type, const std::string& what,
                          int depth = 0);

}  // namespace hive
