#include "runtime/text/tokenizer/split_behavior.hpp"

#include "base/error.hpp"

namespace hive::tokenizer {

SplitBehavior parse_split_behavior(const std::string& name, const std::string& where) {
  if (name == "Removed") return SplitBehavior::Removed;
  if (name == "Isolated") return SplitBehavior::Isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (name == "Contiguous") return SplitBehavior::Contiguous;
  fail(where,
       ": expected Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous (got \"",
       name, "\")");
}

std::vector<Span> regex_spans(const Regex& regex, std::string_view text) {
  if (text.empty()) return {Span{0, 0, false}};
  std::vector<Span> spans;
  std::size_t previous = 0;
  for (const MatchRange& match : regex.find_all(text)) {
    if (previous != match.start) spans.push_back(Span{previous, match.start, false});
    spans.push_back(Span{match.start, match.end, true});
    previous = match.end;
  }
  if (previous != text.size()) spans.push_back(Span{previous, text.size(), false});
  return spans;
}

namespace {

// Merges a match into the range before it, or a match run (Contiguous).
std::vector<PieceRange> merge_forward(const std::vector<Span>& spans, bool contiguous) {
  std::vector<PieceRange> ranges;
  bool previous_match = false;
  for (const Span& span : spans) {
    const bool merge =
        contiguous ? span.is_match == previous_match : span.is_match && !previous_match;
    if (merge && !ranges.empty())
      ranges.back().end = span.end;
    else
      ranges.push_back(PieceRange{span.start, span.end});
    previous_match = span.is_match;
  }
  return ranges;
}

std::vector<PieceRange> merge_with_next(const std::vector<Span>& spans) {
  std::vector<PieceRange> reversed;
  bool previous_match = false;
  for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
    if (it->is_match && !previous_match && !reversed.empty())
      reversed.back().start = it->start;
    else
      reversed.push_back(PieceRange{it->start, it->end});
    previous_match = it->is_match;
  }
  return {reversed.rbegin(), reversed.rend()};
}

}  // namespace

std::vector<PieceRange> apply_split_behavior(const std::vector<Span>& spans,
                                             SplitBehavior behavior) {
  std::vector<PieceRange> ranges;
  switch (behavior) {
    case SplitBehavior::Isolated:
      for (const Span& span : spans) ranges.push_back(PieceRange{span.start, span.end});
      return ranges;
    case SplitBehavior::Removed:
      for (const Span& span : spans)
        if (!span.is_match) ranges.push_back(PieceRange{span.start, span.end});
      return ranges;
    case SplitBehavior::Contiguous:
      return merge_forward(spans, true);
    case SplitBehavior::MergedWithPrevious:
      return merge_forward(spans, false);
    case SplitBehavior::MergedWithNext:
      return merge_with_next(spans);
  }
  return ranges;
}

}  // namespace hive::tokenizer
