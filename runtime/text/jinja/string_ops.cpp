#include "runtime/text/jinja/string_ops.hpp"

#include <algorithm>

#include "base/error.hpp"
#include "runtime/text/jinja/python_chars.hpp"
#include "runtime/text/utf8.hpp"

namespace hive::chat_template {
namespace {

bool is_line_break(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E) ||
         c == 0x85 || c == 0x2028 || c == 0x2029;
}

Value strings_to_list(const std::vector<std::u32string>& parts) {
  ValueList out;
  out.reserve(parts.size());
  for (const auto& part : parts) out.push_back(Value::string(utf8::from_u32(part)));
  return Value::list(std::move(out));
}

// CPython's split_whitespace, scanning from the left.
Value split_whitespace_left(const std::u32string& s, int64_t maxsplit) {
  std::vector<std::u32string> parts;
  size_t i = 0;
  const size_t n = s.size();
  for (int64_t left = maxsplit < 0 ? INT64_MAX : maxsplit; left > 0; --left) {
    while (i < n && py::is_space(s[i])) ++i;
    if (i == n) break;
    const size_t j = i;
    while (i < n && !py::is_space(s[i])) ++i;
    parts.push_back(s.substr(j, i - j));
  }
  while (i < n && py::is_space(s[i])) ++i;
  if (i < n) parts.push_back(s.substr(i));
  return strings_to_list(parts);
}

// CPython's rsplit_whitespace: the mirror image, reversed at the end.
Value split_whitespace_right(const std::u32string& s, int64_t maxsplit) {
  std::vector<std::u32string> parts;
  size_t end = s.size();  // one past the last unread character
  for (int64_t left = maxsplit < 0 ? INT64_MAX : maxsplit; left > 0; --left) {
    while (end > 0 && py::is_space(s[end - 1])) --end;
    if (end == 0) break;
    size_t start = end;
    while (start > 0 && !py::is_space(s[start - 1])) --start;
    parts.push_back(s.substr(start, end - start));
    end = start;
  }
  while (end > 0 && py::is_space(s[end - 1])) --end;
  if (end > 0) parts.push_back(s.substr(0, end));
  std::reverse(parts.begin(), parts.end());
  return strings_to_list(parts);
}

Value split_by_separator(const std::string& s, const std::string& sep, int64_t maxsplit,
                         bool from_right) {
  check(!sep.empty(), "empty separator");
  ValueList parts;
  int64_t splits = 0;
  if (!from_right) {
    size_t start = 0;
    for (size_t at;
         (maxsplit < 0 || splits < maxsplit) && (at = s.find(sep, start)) != std::string::npos;
         ++splits) {
      parts.push_back(Value::string(s.substr(start, at - start)));
      start = at + sep.size();
    }
    parts.push_back(Value::string(s.substr(start)));
    return Value::list(std::move(parts));
  }
  size_t end = s.size();
  for (size_t at; (maxsplit < 0 || splits < maxsplit) && end >= sep.size() &&
                  (at = s.rfind(sep, end - sep.size())) != std::string::npos;
       ++splits) {
    parts.push_back(Value::string(s.substr(at + sep.size(), end - at - sep.size())));
    end = at;
  }
  parts.push_back(Value::string(s.substr(0, end)));
  std::reverse(parts.begin(), parts.end());
  return Value::list(std::move(parts));
}

}  // namespace

std::string strip_string(const std::string& s, const std::optional<std::string>& chars, bool left,
                         bool right) {
  const std::u32string text = utf8::to_u32(s);
  const std::u32string set = chars ? utf8::to_u32(*chars) : std::u32string();
  const auto strips = [&](char32_t c) {
    return chars ? set.find(c) != std::u32string::npos : py::is_space(c);
  };
  size_t begin = 0, end = text.size();
  while (left && begin < end && strips(text[begin])) ++begin;
  while (right && end > begin && strips(text[end - 1])) --end;
  return utf8::from_u32(std::u32string_view(text).substr(begin, end - begin));
}

Value split_string(const std::string& s, const std::optional<std::string>& sep, int64_t maxsplit,
                   bool from_right) {
  if (sep) return split_by_separator(s, *sep, maxsplit, from_right);
  const std::u32string text = utf8::to_u32(s);
  return from_right ? split_whitespace_right(text, maxsplit)
                    : split_whitespace_left(text, maxsplit);
}

Value split_lines(const std::string& s, bool keep_ends) {
  const std::u32string text = utf8::to_u32(s);
  std::vector<std::u32string> lines;
  for (size_t i = 0; i < text.size();) {
    size_t j = i;
    while (j < text.size() && !is_line_break(text[j])) ++j;
    size_t line_end = j;
    if (j < text.size()) {
      j += (text[j] == '\r' && j + 1 < text.size() && text[j + 1] == '\n') ? 2 : 1;
      if (keep_ends) line_end = j;
    }
    lines.push_back(text.substr(i, line_end - i));
    i = j;
  }
  return strings_to_list(lines);
}

std::string replace_string(const std::string& s, const std::string& old_text,
                           const std::string& new_text, int64_t count) {
  std::string out;
  int64_t done = 0;
  const auto may_replace = [&] { return count < 0 || done < count; };
  if (old_text.empty()) {
    // Python inserts the replacement before every character and at the end.
    for (size_t pos = 0; pos < s.size();) {
      if (may_replace()) out += new_text, ++done;
      const size_t start = pos;
      utf8::decode(s, pos);
      out.append(s, start, pos - start);
    }
    if (may_replace()) out += new_text;
    return out;
  }
  size_t start = 0;
  for (size_t at; may_replace() && (at = s.find(old_text, start)) != std::string::npos; ++done) {
    out.append(s, start, at - start);
    out += new_text;
    start = at + old_text.size();
  }
  out.append(s, start, std::string::npos);
  return out;
}

std::string capitalize_string(const std::string& s) {
  std::string out;
  for (size_t pos = 0; pos < s.size();) {
    const char32_t c = utf8::decode(s, pos);
    utf8::append(out, out.empty() ? py::upper_char(c) : py::lower_char(c));
  }
  return out;
}

}  // namespace hive::chat_template
