#pragma once
// Typed reading of config.json keys, shared by the config parsers
// (model_config.cpp, deepseek_config.cpp): errors name the file and the key.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"

namespace hive::config_reader {

using nlohmann::json;

// Typed access to config keys with errors that name the file and the key.
class Reader {
 public:
  Reader(const json& j, const std::string& source) : j_(j), source_(source) {}

  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
  bool contains(const char* key) const { return j_.contains(key); }  // null included

  int64_t integer(const char* key) const {
    check(has(key), source_, ": missing required key '", key, "'");
    return integer_or(key, 0);
  }
  // JSON has one number type: 1e9 and 4096.0 are the integers they spell,
  // 1.5 is no integer, and one past int64 is out of reach.
  int64_t integer_or(const char* key, int64_t fallback) const {
    if (!has(key)) return fallback;
    const json& v = j_[key];
    const double d = v.is_number_float() ? v.get<double>() : 0.0;
    const bool integral = (v.is_number_integer() &&
                           !(v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX})) ||
                          (v.is_number_float() && std::trunc(d) == d && std::fabs(d) < 0x1p63);
    check(integral, source_, ": '", key, "' must be an integer (got ", v.dump(), ")");
    return v.is_number_float() ? static_cast<int64_t>(d) : v.get<int64_t>();
  }
  double number_or(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    check(j_[key].is_number(), source_, ": '", key, "' must be a number (got ", j_[key].dump(),
          ")");
    return j_[key].get<double>();
  }
  bool boolean_or(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    check(j_[key].is_boolean(), source_, ": '", key, "' must be true or false (got ",
          j_[key].dump(), ")");
    return j_[key].get<bool>();
  }
  std::string string_or(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    check(j_[key].is_string(), source_, ": '", key, "' must be a string (got ", j_[key].dump(),
          ")");
    return j_[key].get<std::string>();
  }
  std::vector<int64_t> integers_or_one(const char* key) const {
    std::vector<int64_t> out;
    if (!has(key)) return out;
    if (j_[key].is_number_integer()) return {j_[key].get<int64_t>()};
    check(j_[key].is_array(), source_, ": '", key, "' must be an integer or a list of integers");
    for (const auto& v : j_[key]) {
      check(v.is_number_integer(), source_, ": '", key, "' must hold integers (got ", v.dump(),
            ")");
      out.push_back(v.get<int64_t>());
    }
    return out;
  }
  const json& object(const char* key) const { return j_[key]; }

 private:
  const json& j_;
  const std::string& source_;
};

// A size (hidden, heads, layers, experts, ...) at most 2^20: far past any
// checkpoint's, and small enough that the products of three (a weight's
// element count, KV bytes) cannot overflow int64.
constexpr int64_t kMaxDimension = int64_t{1} << 20;

// Token ids and positions are int32 on every path.
constexpr int64_t kMaxTokenIndex = INT32_MAX;

inline void expect_positive(const std::string& source, const char* key, int64_t value,
                            int64_t max = kMaxDimension) {
  check(value >= 1, source, ": ", key, " must be >= 1 (got ", value, ")");
  check(value <= max, source, ": ", key, " must be <= ", max, " (got ", value, ")");
}

}  // namespace hive::config_reader
