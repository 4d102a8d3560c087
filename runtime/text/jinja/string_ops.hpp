#pragma once
// Python's string algorithms that both str methods and filters use, by code
// point where Python counts code points: strip, split (by a separator or by
// runs of whitespace), splitlines, replace, capitalize.
#include <optional>
#include <string>

#include "runtime/text/jinja/value.hpp"

namespace hive::chat_template {

// chars: the set to strip; nullopt strips whitespace.
std::string strip_string(const std::string& s, const std::optional<std::string>& chars, bool left,
                         bool right);
// Returns a list of strings; sep nullopt splits on whitespace runs.
Value split_string(const std::string& s, const std::optional<std::string>& sep, int64_t maxsplit,
                   bool from_right);
Value split_lines(const std::string& s, bool keep_ends);
// count < 0 replaces every occurrence.
std::string replace_string(const std::string& s, const std::string& old_text,
                           const std::string& new_text, int64_t count);
std::string capitalize_string(const std::string& s);

}  // namespace hive::chat_template
