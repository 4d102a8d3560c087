#include "runtime/text/grammar/repetition_check.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include "runtime/text/grammar/limits.hpp"

namespace hive {
namespace {

// The largest count of "{n}", "{n,}" or "{n,m}" at `pos` (n for "{n,}"), and
// where it ends; nullopt when `pos` holds no counted repetition.
std::optional<std::pair<int64_t, std::size_t>> repetition_at(std::string_view text,
                                                             std::size_t pos) {
  if (pos >= text.size() || text[pos] != '{') return std::nullopt;
  int64_t largest = 0, number = -1;
  for (std::size_t i = pos + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (c >= '0' && c <= '9') {
      number = std::min<int64_t>((number < 0 ? 0 : number) * 10 + (c - '0'), int64_t{1} << 40);
    } else if (c == ',' || c == ' ') {
      largest = std::max(largest, number);
      if (c == ',') number = -1;
    } else if (c == '}') {
      return std::make_pair(std::max(largest, number), i + 1);
    } else {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

void check_repetitions(std::string_view text, ConstraintKind kind) {
  // Per open group, the largest product of counts inside it so far.
  std::vector<int64_t> groups{1};
  auto over = [&](int64_t product, std::size_t at) {
    if (product > grammar_limits::kMaxRepetition)
      throw ConstraintError(kind, str_cat("byte ", at),
                            str_cat("repetitions multiply to ", product, ", more than ",
                                    grammar_limits::kMaxRepetition));
  };
  const bool quoted_strings = kind == ConstraintKind::grammar;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\') {
      ++i;
    } else if (c == '[' || (quoted_strings && (c == '"' || c == '\''))) {
      const char close = c == '[' ? ']' : c;
      for (++i; i < text.size() && text[i] != close; ++i)
        if (text[i] == '\\') ++i;
    } else if (c == '(') {
      groups.push_back(1);
    } else if (c == ')' && groups.size() > 1) {
      int64_t inner = groups.back();
      groups.pop_back();
      if (const auto repeat = repetition_at(text, i + 1)) {
        inner *= std::max<int64_t>(repeat->first, 1);
        over(inner, i + 1);
        i = repeat->second - 1;
      }
      groups.back() = std::max(groups.back(), inner);
    } else if (const auto repeat = repetition_at(text, i)) {
      over(repeat->first, i);
      groups.back() = std::max(groups.back(), repeat->first);
      i = repeat->second - 1;
    }
  }
}

}  // namespace hive
