#include "runtime/loader/gguf_writer.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/error.hpp"

namespace hive {

namespace {

uint64_t padded(uint64_t bytes) {
  return (bytes + GgufWriter::kAlignment - 1) / GgufWriter::kAlignment * GgufWriter::kAlignment;
}

void append_string(std::string& out, std::string_view text) {
  const uint64_t size = text.size();
  out.append(reinterpret_cast<const char*>(&size), sizeof(size));
  out.append(text);
}

template <class T>
void append_number(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

// A FILE* that is closed on every path; writes checked, errors with errno.
class OutputFile {
 public:
  explicit OutputFile(const std::filesystem::path& path) : path_(path) {
    file_ = std::fopen(path.c_str(), "wb");
    check(file_ != nullptr, "cannot write '", path.string(), "': ", std::strerror(errno));
  }
  ~OutputFile() {
    if (file_) std::fclose(file_);
  }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void put(const void* data, size_t size) {
    check(size == 0 || std::fwrite(data, 1, size, file_) == size, "cannot write '", path_.string(),
          "': ", std::strerror(errno));
    written_ += size;
  }
  void pad() {
    static constexpr char kZeros[GgufWriter::kAlignment] = {};
    put(kZeros, padded(written_) - written_);
  }
  void close() {
    const bool flushed = std::fflush(file_) == 0;
    const int flush_errno = errno;
    const bool closed = std::fclose(file_) == 0;
    file_ = nullptr;
    check(flushed && closed, "cannot write '", path_.string(),
          "': ", std::strerror(flushed ? errno : flush_errno));
  }

 private:
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  uint64_t written_ = 0;
};

}  // namespace

void GgufWriter::begin_entry(std::string_view key, GgufValueType type) {
  check(keys_.insert(std::string(key)).second, "GGUF metadata key '", key, "' added twice");
  put_string(key);
  put_number(static_cast<uint32_t>(type));
  ++metadata_count_;
}

void GgufWriter::put_string(std::string_view text) {
  append_string(metadata_, text);
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type,
                            const std::vector<int64_t>& dims) {
  const GgmlTypeInfo info = ggml_type_info(type);
  check(!tensor_names_.count(name), "GGUF tensor '", name, "' added twice");
  check(!dims.empty() && dims.size() <= 4, "GGUF tensor '", name, "' has ", dims.size(),
        " dimensions (1 to 4 allowed)");
  int64_t numel = 1;
  for (const int64_t d : dims) {
    check(d > 0, "GGUF tensor '", name, "' has a dimension of ", d);
    numel *= d;
  }
  check(dims[0] % info.block_size == 0, "GGUF tensor '", name, "': row of ", dims[0],
        " is not a whole number of ", info.name, " blocks (", info.block_size, ")");
  const uint64_t nbytes = static_cast<uint64_t>(numel / info.block_size) * info.block_bytes;
  tensor_names_.insert(name);
  tensors_.push_back({name, type, dims, data_bytes_, nbytes});
  data_bytes_ += padded(nbytes);
}

void GgufWriter::write(const std::filesystem::path& path, const TensorSource& tensor_data) const {
  std::string head = "GGUF";
  append_number<uint32_t>(head, 3);
  append_number<uint64_t>(head, tensors_.size());
  append_number<uint64_t>(head, metadata_count_);
  head += metadata_;
  for (const TensorInfo& t : tensors_) {
    append_string(head, t.name);
    append_number<uint32_t>(head, static_cast<uint32_t>(t.dims.size()));
    for (const int64_t d : t.dims) append_number<uint64_t>(head, static_cast<uint64_t>(d));
    append_number<uint32_t>(head, static_cast<uint32_t>(t.type));
    append_number<uint64_t>(head, t.offset);
  }
  std::filesystem::path temporary = path;
  temporary += ".tmp";
  try {
    OutputFile out(temporary);
    out.put(head.data(), head.size());
    out.pad();
    for (size_t i = 0; i < tensors_.size(); ++i) {
      const std::vector<std::byte> bytes = tensor_data(i);
      check(bytes.size() == tensors_[i].nbytes, "GGUF tensor '", tensors_[i].name,
            "': ", bytes.size(), " bytes given, ", tensors_[i].nbytes, " expected");
      out.put(bytes.data(), bytes.size());
      out.pad();
    }
    out.close();
    std::filesystem::rename(temporary, path);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw;
  }
}

}  // namespace hive
