#include "runtime/text/tokenizer/metaspace.hpp"

#include "base/error.hpp"
#include "runtime/text/tokenizer/split_behavior.hpp"
#include "runtime/text/utf8.hpp"

namespace hive::tokenizer {
namespace {

PrependScheme parse_scheme(const std::string& name, const std::string& path) {
  if (name == "first") return PrependScheme::First;
  if (name == "never") return PrependScheme::Never;
  if (name == "always") return PrependScheme::Always;
  fail(path, ": expected \"first\", \"never\" or \"always\" (got \"", name, "\")");
}

std::string replace_all(const std::string& text, char from, const std::string& to) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == from)
      out.append(to);
    else
      out.push_back(c);
  }
  return out;
}

}  // namespace

Metaspace Metaspace::from_json(const Json& spec, const std::string& path) {
  Metaspace metaspace;
  metaspace.replacement_ = char_field(spec, "replacement", path);
  utf8::append(metaspace.replacement_text_, metaspace.replacement_);
  const auto scheme = optional_string(spec, "prepend_scheme", path);
  if (scheme) metaspace.prepend_scheme_ = parse_scheme(*scheme, child_path(path, "prepend_scheme"));
  // Older files say add_prefix_space: false; Hugging Face accepts that only
  // beside prepend_scheme "never".
  if (!bool_field(spec, "add_prefix_space", path, true))
    check(metaspace.prepend_scheme_ == PrependScheme::Never && scheme.has_value(), path,
          ": add_prefix_space false needs prepend_scheme \"never\" (got \"",
          scheme.value_or("always"), "\")");
  metaspace.split_ = bool_field(spec, "split", path, true);
  return metaspace;
}

void Metaspace::pre_tokenize(Piece& piece, std::vector<Piece>& out) const {
  piece.text = replace_all(piece.text, ' ', replacement_text_);
  const bool starts_with_mark = piece.text.starts_with(replacement_text_);
  const bool prepend =
      !starts_with_mark && (prepend_scheme_ == PrependScheme::Always ||
                            (prepend_scheme_ == PrependScheme::First && piece.at_input_start));
  if (prepend) piece.text.insert(0, replacement_text_);
  if (!split_) {
    out.push_back(std::move(piece));
    return;
  }
  const char32_t mark = replacement_;
  const auto spans = char_spans(piece.text, [mark](char32_t c) { return c == mark; });
  append_ranges(piece, apply_split_behavior(spans, SplitBehavior::MergedWithNext), out);
}

void Metaspace::decode_chain(std::vector<std::string>& tokens) const {
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const bool drop = i == 0 && prepend_scheme_ != PrependScheme::Never;
    std::string out;
    std::size_t pos = 0;
    const std::string& token = tokens[i];
    while (pos < token.size()) {
      const std::size_t start = pos;
      if (utf8::next_code_point(token, pos) != replacement_)
        out.append(token, start, pos - start);
      else if (!drop)
        out.push_back(' ');
    }
    tokens[i] = std::move(out);
  }
}

}  // namespace hive::tokenizer
