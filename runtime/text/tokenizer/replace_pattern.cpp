#include "runtime/text/tokenizer/replace_pattern.hpp"

#include "base/error.hpp"
#include "runtime/text/utf8.hpp"

namespace hive::tokenizer {

Regex pattern_regex(const Json& pattern, const std::string& path) {
  if (!(pattern.is_object() && pattern.size() == 1 &&
        (pattern.contains("String") || pattern.contains("Regex"))))
    fail(path, ": expected {\"String\": ...} or {\"Regex\": ...} (got ", describe(pattern), ")");
  if (pattern.contains("String"))
    return Regex(Regex::escape(string_field(pattern, "String", path)), path);
  return Regex(string_field(pattern, "Regex", path), path);
}

ReplacePattern ReplacePattern::from_json(const Json& spec, const std::string& path) {
  return ReplacePattern(pattern_regex(required(spec, "pattern", path), child_path(path, "pattern")),
                        string_field(spec, "content", path));
}

ReplaceResult ReplacePattern::apply(std::string_view text) const {
  ReplaceResult result;
  if (text.empty()) return result;  // Hugging Face looks for no match in empty text
  std::size_t copied = 0;
  for (const MatchRange& match : regex_.find_all(text)) {
    if (match.start == 0 && match.end > 0) {
      result.first_match_at_start = true;
      const std::size_t first_char_end = utf8::sequence_length(static_cast<unsigned char>(text[0]));
      result.first_match_shifts_start = content_.empty() || match.end > first_char_end;
    }
    result.text.append(text.substr(copied, match.start - copied));
    result.text.append(content_);
    copied = match.end;
  }
  result.text.append(text.substr(copied));
  return result;
}

}  // namespace hive::tokenizer
