#include "runtime/loader/gguf_file.hpp"

#include <bit>
#include <cstring>

#include "base/error.hpp"
#include "runtime/loader/gguf_cursor.hpp"

namespace hive {

namespace {

constexpr uint32_t kMaxDims = 4;  // ggml's GGML_MAX_DIMS
// The smallest metadata entry (empty key, type, one u8) and tensor info
// (empty name, n_dims 0, type, offset): counts are checked against them
// before anything is reserved.
constexpr uint64_t kMinMetadataBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;

std::string supported_type_names() {
  std::string names;
  for (const GgmlTypeInfo& info : kGgmlTypes)
    names +=
        str_cat(names.empty() ? "" : ", ", info.name, " (", static_cast<uint32_t>(info.type), ")");
  return names;
}

}  // namespace

GgufFile::GgufFile(const std::filesystem::path& path) : path_(path), file_(path) { parse(); }

GgufFile::~GgufFile() = default;

void GgufFile::parse() {
  GgufCursor cursor(file_.data(), file_.size(), path_.string());
  uint64_t tensor_count = 0, metadata_count = 0;
  read_header(cursor, tensor_count, metadata_count);
  read_metadata(cursor, metadata_count);
  read_alignment();
  read_tensor_infos(cursor, tensor_count);
  const uint64_t data_start = (cursor.position() + alignment_ - 1) / alignment_ * alignment_;
  place_tensors(data_start);
}

void GgufFile::read_header(GgufCursor& cursor, uint64_t& tensor_count, uint64_t& metadata_count) {
  const std::string& where = cursor.file();
  char magic[4];
  std::memcpy(magic, cursor.take(4, "header", "magic"), 4);
  check(std::memcmp(magic, "GGUF", 4) == 0, where, ": not a GGUF file: magic is 0x", std::hex,
        std::bit_cast<uint32_t>(magic), ", expected 0x46554747 (\"GGUF\")");
  version_ = cursor.read<uint32_t>("header", "version");
  // A big-endian file (gguf-py can write one) has its version byte-swapped.
  const uint32_t swapped = __builtin_bswap32(version_);
  check(!(version_ > 0xffff && (swapped == 2 || swapped == 3)), where,
        ": big-endian GGUF (version field 0x", std::hex, version_,
        ") is not supported; only little-endian files are");
  check(version_ == 2 || version_ == 3, where, ": GGUF version ", version_,
        " is not supported (only versions 2 and 3)");
  tensor_count = cursor.read<uint64_t>("header", "tensor count");
  metadata_count = cursor.read<uint64_t>("header", "metadata count");
  cursor.check_count(metadata_count, kMinMetadataBytes, "header", "metadata entries");
  cursor.check_count(tensor_count, kMinTensorInfoBytes, "header", "tensor infos");
}

void GgufFile::read_metadata(GgufCursor& cursor, uint64_t count) {
  for (uint64_t i = 0; i < count; ++i) {
    std::string key = cursor.read_string(str_cat("metadata entry ", i, " key"));
    const std::string what = str_cat("metadata key '", key, "'");
    const auto type = static_cast<GgufValueType>(cursor.read<uint32_t>(what, "value type"));
    GgufValue value = read_gguf_value(cursor, type, what);
    check(!metadata_.contains(key), cursor.file(), ": ", what, " is given twice");
    metadata_.emplace(std::move(key), std::move(value));
  }
}

void GgufFile::read_alignment() {
  const GgufValue* value = find("general.alignment");
  if (!value) return;  // the format's default, 32
  const std::string where = path_.string();
  check(value->type == GgufValueType::u32, where, ": metadata key 'general.alignment' has type ",
        gguf_value_type_name(value->type), ", expected u32");
  alignment_ = gguf_scalar_as<uint32_t>(*value);
  check(std::has_single_bit(alignment_), where,
        ": metadata key 'general.alignment' must be a power of two (got ", alignment_, ")");
}

void GgufFile::read_tensor_infos(GgufCursor& cursor, uint64_t count) {
  tensors_.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    GgufTensor tensor;
    tensor.name = cursor.read_string(str_cat("tensor info ", i, " name"));
    const std::string what = str_cat("tensor '", tensor.name, "'");
    const auto n_dims = cursor.read<uint32_t>(what, "dimension count");
    check(n_dims <= kMaxDims, cursor.file(), ": ", what, ": ", n_dims, " dimensions, at most ",
          kMaxDims);
    tensor.numel = 1;
    bool overflow = false;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const auto dim = cursor.read<uint64_t>(what, "dimension");
      overflow |= dim > static_cast<uint64_t>(INT64_MAX);
      tensor.dims.push_back(static_cast<int64_t>(dim));
      overflow |= __builtin_mul_overflow(tensor.numel, tensor.dims.back(), &tensor.numel);
    }
    check(!overflow, cursor.file(), ": ", what, ": the element count of its ", n_dims,
          " dimensions overflows");
    const auto type_id = cursor.read<uint32_t>(what, "type");
    const auto info = ggml_type_info(type_id);
    check(info.has_value(), cursor.file(), ": ", what, ": unsupported ggml type ", type_id,
          " (supported: ", supported_type_names(), ")");
    tensor.type = info->type;
    const int64_t row = tensor.dims.empty() ? 1 : tensor.dims[0];
    check(row % info->block_size == 0, cursor.file(), ": ", what, ": row length ", row,
          " is not a multiple of the ", info->name, " block size ", info->block_size);
    tensor.nbytes = static_cast<uint64_t>(tensor.numel / info->block_size) * info->block_bytes;
    tensor.offset = cursor.read<uint64_t>(what, "offset");
    check(tensor_index_.emplace(tensor.name, tensors_.size()).second, cursor.file(), ": ", what,
          " is named twice");
    tensors_.push_back(std::move(tensor));
  }
}

void GgufFile::place_tensors(uint64_t data_start) {
  const std::string where = path_.string();
  check(tensors_.empty() || data_start <= file_.size(), where, ": the data section starts at ",
        data_start, ", past the end of the file (", file_.size(), " bytes)");
  const uint64_t data_size = data_start <= file_.size() ? file_.size() - data_start : 0;
  const char* data = file_.data() + (data_size > 0 ? data_start : 0);
  for (GgufTensor& tensor : tensors_) {
    check(tensor.offset % alignment_ == 0, where, ": tensor '", tensor.name, "': offset ",
          tensor.offset, " is not a multiple of the alignment ", alignment_);
    check(tensor.offset <= data_size && tensor.nbytes <= data_size - tensor.offset, where,
          ": tensor '", tensor.name, "': its ", tensor.nbytes, " bytes at offset ", tensor.offset,
          " run past the end of the data section (", data_size,
          " bytes): the file is truncated or corrupt");
    tensor.data = data + tensor.offset;
  }
}

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufValue& GgufFile::value_of(std::string_view key, GgufValueType expected) const {
  const GgufValue* value = find(key);
  check(value != nullptr, path_.string(), ": metadata key '", key, "' is missing");
  check(value->type == expected, path_.string(), ": metadata key '", key, "' has type ",
        gguf_value_type_name(value->type), ", expected ", gguf_value_type_name(expected));
  return *value;
}

template <class T>
T GgufFile::get(std::string_view key) const {
  return gguf_scalar_as<T>(value_of(key, gguf_type_of<T>()));
}

template <class T>
std::vector<T> GgufFile::get_array(std::string_view key) const {
  const GgufValue& array = value_of(key, GgufValueType::array);
  check(array.element_type == gguf_type_of<T>(), path_.string(), ": metadata key '", key,
        "' is an array of ", gguf_value_type_name(array.element_type), ", expected an array of ",
        gguf_value_type_name(gguf_type_of<T>()));
  if constexpr (std::is_same_v<T, std::string>) {
    return array.strings;
  } else {
    std::vector<T> elements;
    elements.reserve(array.count);
    for (uint64_t i = 0; i < array.count; ++i)
      elements.push_back(gguf_decode<T>(array.packed + i * sizeof(T)));
    return elements;
  }
}

#define HIVE_GGUF_GETTERS(T)                           \
  template T GgufFile::get<T>(std::string_view) const; \
  template std::vector<T> GgufFile::get_array<T>(std::string_view) const;
HIVE_GGUF_GETTERS(uint8_t)
HIVE_GGUF_GETTERS(int8_t)
HIVE_GGUF_GETTERS(uint16_t)
HIVE_GGUF_GETTERS(int16_t)
HIVE_GGUF_GETTERS(uint32_t)
HIVE_GGUF_GETTERS(int32_t)
HIVE_GGUF_GETTERS(float)
HIVE_GGUF_GETTERS(bool)
HIVE_GGUF_GETTERS(std::string)
HIVE_GGUF_GETTERS(uint64_t)
HIVE_GGUF_GETTERS(int64_t)
HIVE_GGUF_GETTERS(double)
#undef HIVE_GGUF_GETTERS

}  // namespace hive
