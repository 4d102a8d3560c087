#pragma once
// Hash maps keyed by std::string that can be searched with a string_view
// without building a std::string first.
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace hive::tokenizer {

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const noexcept {
    return std::hash<std::string_view>{}(text);
  }
};

template <class Value>
using StringMap = std::unordered_map<std::string, Value, StringHash, std::equal_to<>>;

}  // namespace hive::tokenizer
