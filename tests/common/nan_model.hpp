#pragma once
// A copy of a checkpoint whose final norm's weights are NaN: every logit
// is NaN, so no token can be sampled and no perplexity exists.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace hive::test {

inline void write_nan_model(const std::filesystem::path& source, const std::filesystem::path& dir) {
  std::filesystem::remove_all(dir);
  std::filesystem::copy(source, dir, std::filesystem::copy_options::recursive);
  std::fstream file(dir / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
  uint64_t header_size = 0;
  file.read(reinterpret_cast<char*>(&header_size), 8);
  std::string header(header_size, '\0');
  file.read(header.data(), static_cast<std::streamsize>(header_size));
  const nlohmann::json tensors = nlohmann::json::parse(header);
  const nlohmann::json& norm = tensors.at("model.norm.weight");
  const auto begin = norm["data_offsets"][0].get<uint64_t>();
  const auto end = norm["data_offsets"][1].get<uint64_t>();
  const std::string nan_bytes = norm["dtype"] == "F32" ? std::string("\x00\x00\xc0\x7f", 4)
                                                       : std::string("\xc0\x7f", 2);
  file.seekp(static_cast<std::streamoff>(8 + header_size + begin));
  for (uint64_t at = begin; at < end; at += nan_bytes.size())
    file.write(nan_bytes.data(), static_cast<std::streamsize>(nan_bytes.size()));
}

}  // namespace hive::test
