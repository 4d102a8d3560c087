#pragma once
// A compiled regular expression over UTF-8 text (PCRE2, JIT-compiled, with
// Unicode properties and Unicode \s \d \w). Hugging Face compiles its
// patterns with Oniguruma; the patterns tokenizers ship (GPT-2, Llama-3,
// Qwen) mean the same in both.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hive::tokenizer {

struct MatchRange {
  std::size_t start = 0;
  std::size_t end = 0;
};

class Regex {
 public:
  // Throws hive::Error naming `where`, PCRE2's message and the offset.
  Regex(std::string_view pattern, const std::string& where);

  // Non-overlapping matches, left to right, in valid UTF-8 text. An empty
  // match right where the previous match ended is skipped (Oniguruma's
  // find_iter rule, as Hugging Face iterates).
  std::vector<MatchRange> find_all(std::string_view text) const;

  const std::string& pattern() const { return pattern_; }

  // The pattern that matches `literal` exactly.
  static std::string escape(std::string_view literal);

 private:
  struct Code;
  std::string pattern_;
  std::shared_ptr<const Code> code_;
};

}  // namespace hive::tokenizer
