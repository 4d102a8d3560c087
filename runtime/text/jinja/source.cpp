#include "runtime/text/jinja/source.hpp"

#include <algorithm>

#include "runtime/text/utf8.hpp"

namespace hive::chat_template {

std::string Source::location(size_t offset) const {
  offset = std::min(offset, text_.size());
  const std::string_view before(text_.data(), offset);
  const size_t line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
  const size_t line_start =
      before.rfind('\n') == std::string_view::npos ? 0 : before.rfind('\n') + 1;
  const size_t column = 1 + utf8::length(before.substr(line_start));
  return str_cat(name_, ":", line, ":", column);
}

}  // namespace hive::chat_template
