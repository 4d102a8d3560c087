// Text filters. Like jinja2's, they first turn their input into a string
// with str() (so `5 | upper` is "5" and an undefined value is "").
#include "base/error.hpp"
#include "runtime/text/jinja/call_args.hpp"
#include "runtime/text/jinja/filter_functions.hpp"
#include "runtime/text/jinja/python_chars.hpp"
#include "runtime/text/jinja/string_ops.hpp"
#include "runtime/text/jinja/value_ops.hpp"
#include "runtime/text/jinja/value_text.hpp"
#include "runtime/text/utf8.hpp"

namespace hive::chat_template::filter {
namespace {

bool is_word_char(char32_t c) {
  return c == '_' || py::is_alpha_char(c) || py::is_digit_char(c);
}

// jinja2 splits titles at runs of `-`, whitespace and opening brackets.
bool is_title_break(char32_t c) {
  return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py::is_space(c);
}

}  // namespace

Value trim(const Value& input, const CallArgs& call) {
  BoundArgs args("trim", call, {"chars"});
  return Value::string(strip_string(to_str(input), args.optional_string(0), true, true));
}

Value upper(const Value& input, const CallArgs& call) {
  BoundArgs args("upper", call, {});
  return Value::string(py::upper(to_str(input)));
}

Value lower(const Value& input, const CallArgs& call) {
  BoundArgs args("lower", call, {});
  return Value::string(py::lower(to_str(input)));
}

Value capitalize(const Value& input, const CallArgs& call) {
  BoundArgs args("capitalize", call, {});
  return Value::string(capitalize_string(to_str(input)));
}

// Each word: first character upper-cased, the rest lower-cased.
Value title(const Value& input, const CallArgs& call) {
  BoundArgs args("title", call, {});
  const std::u32string text = utf8::to_u32(to_str(input));
  std::u32string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool starts_item = i == 0 || is_title_break(text[i]) != is_title_break(text[i - 1]);
    out += starts_item ? py::upper_char(text[i]) : py::lower_char(text[i]);
  }
  return Value::string(utf8::from_u32(out));
}

Value replace(const Value& input, const CallArgs& call) {
  BoundArgs args("replace", call, {"old", "new", "count"});
  check(args.has(0) && args.has(1), "replace filter requires 'old' and 'new'");
  return Value::string(replace_string(to_str(input), to_str(*args.get(0)), to_str(*args.get(1)),
                                      args.int_or(2, -1)));
}

Value indent(const Value& input, const CallArgs& call) {
  BoundArgs args("indent", call, {"width", "first", "blank"});
  // jinja2 appends "\n" to the input: anything but a string fails there.
  if (input.is_undefined()) raise_undefined(input);
  check(input.is_string(), "unsupported operand type(s) for +=: '", input.type_name(),
        "' and 'str'");
  std::string indentation(4, ' ');
  if (const Value* width = args.get(0)) {
    indentation =
        width->is_string()
            ? width->as_string()
            : std::string(static_cast<size_t>(std::max<int64_t>(0, width->as_int())), ' ');
  }
  // jinja2 appends a newline first so that splitlines() keeps a trailing one.
  const ValueList lines = split_lines(to_str(input) + "\n", false).as_list();
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i].as_string();
    if (i > 0) out += "\n";
    if (i > 0 && (args.flag_or(2, false) || !line.empty())) out += indentation;
    out += line;
  }
  if (args.flag_or(1, false)) out = indentation + out;
  return Value::string(std::move(out));
}

// Python's str.center, including where it puts the odd space.
Value center(const Value& input, const CallArgs& call) {
  BoundArgs args("center", call, {"width"});
  const std::string text = to_str(input);
  const int64_t width = args.int_or(0, 80);
  const int64_t margin = width - static_cast<int64_t>(utf8::length(text));
  if (margin <= 0) return Value::string(text);
  const int64_t left = margin / 2 + (margin & width & 1);
  return Value::string(std::string(static_cast<size_t>(left), ' ') + text +
                       std::string(static_cast<size_t>(margin - left), ' '));
}

Value truncate(const Value& input, const CallArgs& call) {
  BoundArgs args("truncate", call, {"length", "killwords", "end", "leeway"});
  // jinja2 takes len() of the input: an Undefined has length 0 and comes
  // back as it is; None and numbers have no length.
  if (input.is_undefined()) return input;
  check(input.is_string(), "object of type '", input.type_name(), "' has no len()");
  const std::u32string text = utf8::to_u32(to_str(input));
  const int64_t length = args.int_or(0, 255);
  const std::u32string end = utf8::to_u32(args.string_or(2, "..."));
  const int64_t leeway = args.int_or(3, 5);  // jinja2's default truncate.leeway policy
  check(length >= static_cast<int64_t>(end.size()), "expected length >= ", end.size(), ", got ",
        length);
  if (static_cast<int64_t>(text.size()) <= length + leeway) return Value::string(to_str(input));
  std::u32string kept = text.substr(0, static_cast<size_t>(length) - end.size());
  if (!args.flag_or(1, false)) {
    const size_t space = kept.rfind(U' ');
    if (space != std::u32string::npos) kept.resize(space);
  }
  return Value::string(utf8::from_u32(kept + end));
}

Value wordcount(const Value& input, const CallArgs& call) {
  BoundArgs args("wordcount", call, {});
  int64_t words = 0;
  bool in_word = false;
  for (char32_t c : utf8::to_u32(to_str(input))) {
    if (is_word_char(c) && !in_word) ++words;
    in_word = is_word_char(c);
  }
  return Value::integer(words);
}

Value string(const Value& input, const CallArgs& call) {
  BoundArgs args("string", call, {});
  return Value::string(to_str(input));
}

// There is no autoescaping in chat templates, so `safe` changes nothing.
Value safe(const Value& input, const CallArgs& call) {
  BoundArgs args("safe", call, {});
  return input;
}

Value escape(const Value& input, const CallArgs& call) {
  BoundArgs args("escape", call, {});
  std::string out;
  for (char c : to_str(input)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return Value::string(std::move(out));
}

}  // namespace hive::chat_template::filter
