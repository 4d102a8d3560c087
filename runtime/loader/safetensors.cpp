#include "runtime/loader/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/json_reader.hpp"

namespace hive {

namespace {

using nlohmann::json;

// safetensors dtype strings -> ours; anything else is reported as unsupported.
std::optional<DType> safetensors_dtype(const std::string& name) {
  if (name == "F32") return DType::f32;
  if (name == "F16") return DType::f16;
  if (name == "BF16") return DType::bf16;
  if (name == "I32") return DType::i32;
  if (name == "I64") return DType::i64;
  if (name == "F8_E4M3") return DType::f8_e4m3;  // FP8 checkpoints' weights
  return std::nullopt;
}

const char* safetensors_name(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "F32";
    case DType::f16:
      return "F16";
    case DType::bf16:
      return "BF16";
    case DType::i32:
      return "I32";
    case DType::i64:
      return "I64";
    case DType::f8_e4m3:
      return "F8_E4M3";
    default:  // the block types come only from GGUF files
      return "?";
  }
}

struct Extent {
  uint64_t begin, end;
  std::string name;
};

}  // namespace

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path) : path_(path), file_(path) {
  check(file_.size() >= 8, path.string(), ": truncated: ", file_.size(),
        " bytes, but a safetensors file starts with an 8-byte header length");
  uint64_t header_len = 0;
  std::memcpy(&header_len, file_.data(), 8);  // little-endian on every target we build for
  check(header_len <= file_.size() - 8, path.string(), ": header length ", header_len,
        " is longer than the file (", file_.size(), " bytes)");
  parse_header(static_cast<size_t>(header_len));
}

SafetensorsFile::~SafetensorsFile() = default;

void SafetensorsFile::parse_header(size_t header_len) {
  const std::string where = path_.string();
  const char* base = file_.data();
  const json header = parse_json(std::string_view(base + 8, header_len), where + ": header");
  check(header.is_object(), where, ": header must be a JSON object");
  char* data = const_cast<char*>(base) + 8 + header_len;
  const uint64_t data_size = file_.size() - 8 - header_len;
  std::vector<Extent> extents;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      check(entry.is_object(), where, ": __metadata__ must be an object");
      // The format's metadata is a map of strings to strings (the reference
      // library refuses anything else): a file with more is not one.
      for (const auto& [key, value] : entry.items()) {
        check(value.is_string(), where, ": __metadata__[\"", key, "\"] must be a string (got ",
              value.type_name(), ")");
        metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    const std::string tensor = str_cat(where, ": tensor '", name, "'");
    check(entry.is_object() && entry.contains("dtype") && entry.contains("shape") &&
              entry.contains("data_offsets"),
          tensor, ": entry needs dtype, shape and data_offsets");
    check(entry["dtype"].is_string(), tensor, ": dtype must be a string");
    const auto dtype_str = entry["dtype"].get<std::string>();
    const auto dtype = safetensors_dtype(dtype_str);
    check(dtype.has_value(), tensor, ": unsupported dtype ", dtype_str,
          " (supported: F32, F16, BF16, I32, I64, F8_E4M3)");
    const json& shape = entry["shape"];
    check(shape.is_array() && shape.size() <= kMaxDims, tensor,
          ": shape must be an array of at most ", kMaxDims, " dimensions");
    int64_t dims[kMaxDims] = {};
    uint64_t numel = 1;
    bool overflow = false, empty = false;
    for (size_t d = 0; d < shape.size(); ++d) {
      check(shape[d].is_number_unsigned(), tensor, ": shape entries must be non-negative integers");
      const uint64_t extent = shape[d].get<uint64_t>();
      check(extent < (uint64_t{1} << 40), tensor, ": dimension ", extent, " is implausibly large");
      dims[d] = static_cast<int64_t>(extent);
      overflow |= __builtin_mul_overflow(numel, extent, &numel);
      empty |= extent == 0;
    }
    check(empty || (!overflow && numel <= data_size), tensor,
          ": shape holds more elements than the file has bytes");
    const json& offsets = entry["data_offsets"];
    check(offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() &&
              offsets[1].is_number_unsigned(),
          tensor, ": data_offsets must be [begin, end]");
    const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    check(begin <= end, tensor, ": data_offsets [", begin, ", ", end, "] are reversed");
    check(end <= data_size, tensor, ": data_offsets [", begin, ", ", end,
          "] run past the end of the data section (", data_size,
          " bytes): the file is truncated or corrupt");
    check(end - begin == numel * dtype_size(*dtype), tensor, ": data_offsets span ", end - begin,
          " bytes but shape and dtype need ", numel * dtype_size(*dtype));
    if (begin < end) extents.push_back({begin, end, name});  // an empty tensor overlaps nothing
    char* bytes = data + begin;
    if (reinterpret_cast<uintptr_t>(bytes) % dtype_size(*dtype) != 0) {
      realigned_.push_back(std::make_unique<char[]>(end - begin));
      std::memcpy(realigned_.back().get(), bytes, end - begin);
      bytes = realigned_.back().get();
    }
    tensors_[name] = Tensor::view(bytes, *dtype, dims, static_cast<int>(shape.size()));
  }
  std::sort(extents.begin(), extents.end(),
            [](const Extent& a, const Extent& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < extents.size(); ++i)
    check(extents[i].begin >= extents[i - 1].end, where, ": tensors '", extents[i - 1].name,
          "' and '", extents[i].name, "' overlap (bytes ", extents[i].begin, " to ",
          std::min(extents[i].end, extents[i - 1].end), ")");
}

void write_safetensors(const std::filesystem::path& path,
                       const std::map<std::string, Tensor>& tensors) {
  json header = json::object();
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    check(t.device == Device::cpu && t.is_contiguous(), "write_safetensors: '", name,
          "' must be a contiguous host tensor");
    std::vector<int64_t> shape(t.shape.begin(), t.shape.begin() + t.ndim);
    header[name] = {{"dtype", safetensors_name(t.dtype)},
                    {"shape", shape},
                    {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keep the data section 8-byte aligned
  std::ofstream out(path, std::ios::binary);
  check(out.good(), path.string(), ": cannot open for writing");
  const uint64_t header_len = text.size();
  out.write(reinterpret_cast<const char*>(&header_len), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& [name, t] : tensors)
    out.write(static_cast<const char*>(t.data), static_cast<std::streamsize>(t.nbytes()));
  check(out.good(), path.string(), ": write failed");
}

}  // namespace hive
