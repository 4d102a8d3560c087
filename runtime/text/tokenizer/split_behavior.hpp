#pragma once
// Cutting a piece around pattern matches, with Hugging Face's delimiter
// behaviours. For "the-final--countdown" split on '-':
//   Removed            ["the", "final", "countdown"]
//   Isolated           ["the", "-", "final", "-", "-", "countdown"]
//   MergedWithPrevious ["the-", "final-", "-", "countdown"]
//   MergedWithNext     ["the", "-final", "-", "-countdown"]
//   Contiguous         ["the", "-", "final", "--", "countdown"]
#include <string>
#include <string_view>
#include <vector>

#include "runtime/text/tokenizer/piece.hpp"
#include "runtime/text/tokenizer/regex.hpp"

namespace hive::tokenizer {

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// "Removed", "Isolated", ... as tokenizer.json spells them; errors name `where`.
SplitBehavior parse_split_behavior(const std::string& name, const std::string& where);

// A stretch of the text: a pattern match or the gap between two.
struct Span {
  std::size_t start = 0;
  std::size_t end = 0;
  bool is_match = false;
};

// Spans covering the whole text, in order (empty text: one empty gap).
std::vector<Span> regex_spans(const Regex& regex, std::string_view text);

// Spans where each character for which `matches(c)` is true is a match of its own.
template <class Predicate>
std::vector<Span> char_spans(std::string_view text, Predicate&& matches);

// The ranges to keep, after applying the behaviour to the spans.
std::vector<PieceRange> apply_split_behavior(const std::vector<Span>& spans,
                                             SplitBehavior behavior);

}  // namespace hive::tokenizer

#include "runtime/text/utf8.hpp"

namespace hive::tokenizer {

template <class Predicate>
std::vector<Span> char_spans(std::string_view text, Predicate&& matches) {
  std::vector<Span> spans;
  if (text.empty()) return {Span{0, 0, false}};
  std::size_t gap_start = 0, pos = 0;
  while (pos < text.size()) {
    const std::size_t start = pos;
    const char32_t c = utf8::next_code_point(text, pos);
    if (!matches(c)) continue;
    if (gap_start < start) spans.push_back(Span{gap_start, start, false});
    spans.push_back(Span{start, pos, true});
    gap_start = pos;
  }
  if (gap_start < text.size()) spans.push_back(Span{gap_start, text.size(), false});
  return spans;
}

}  // namespace hive::tokenizer
