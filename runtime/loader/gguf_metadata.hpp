#pragma once
// Reading GGUF metadata by meaning rather than by stored type: writers store
// the same count as u32, i32 or u64 and the same factor as f32 or f64, so
// these accept any integer (or any number) type. Errors name the file and
// the key.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/loader/gguf_file.hpp"

namespace hive {

// The integer at `key`, or nullopt when it is absent.
std::optional<int64_t> gguf_integer(const GgufFile& file, std::string_view key);
int64_t gguf_required_integer(const GgufFile& file, std::string_view key);

// The number (integer or float) at `key`, or nullopt when it is absent.
std::optional<double> gguf_number(const GgufFile& file, std::string_view key);
double gguf_required_number(const GgufFile& file, std::string_view key);

std::optional<std::string> gguf_string(const GgufFile& file, std::string_view key);
std::optional<bool> gguf_bool(const GgufFile& file, std::string_view key);

}  // namespace hive
