#pragma once
// The {"String": ...} / {"Regex": ...} pattern with its replacement content,
// shared by the Replace normalizer and the Replace decoder.
#include <string>
#include <string_view>

#include "runtime/text/tokenizer/json_fields.hpp"
#include "runtime/text/tokenizer/regex.hpp"

namespace hive::tokenizer {

struct ReplaceResult {
  std::string text;
  bool first_match_at_start = false;      // a match begins at offset 0
  bool first_match_shifts_start = false;  // ...and deletes or merges leading characters
};

class ReplacePattern {
 public:
  // Reads "pattern" and "content" from a Replace spec.
  static ReplacePattern from_json(const Json& spec, const std::string& path);

  ReplaceResult apply(std::string_view text) const;

 private:
  ReplacePattern(Regex regex, std::string content)
      : regex_(std::move(regex)), content_(std::move(content)) {}
  Regex regex_;
  std::string content_;
};

// The regex of a {"String": s} or {"Regex": r} pattern object at `path`.
Regex pattern_regex(const Json& pattern, const std::string& path);

}  // namespace hive::tokenizer
