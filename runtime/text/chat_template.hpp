#pragma once
// A Hugging Face chat template: tokenizer_config.json's `chat_template`,
// rendered into a prompt byte for byte as transformers'
// apply_chat_template(..., tokenize=False) renders it with jinja2.
//
//   auto chat = hive::ChatTemplate::from_tokenizer_config(dir / "tokenizer_config.json");
//   std::string prompt = chat.render(messages, /*add_generation_prompt=*/true,
//                                    {{"enable_thinking", false}});
//
// Like transformers, render() first drops message keys whose value is null,
// copies a message's reasoning (reasoning_content / thinking / reasoning) to
// both `reasoning_content` and `thinking`, and passes the template:
//   messages, add_generation_prompt, tools (null unless given in
//   extra_kwargs), documents (likewise), the special tokens (bos_token,
//   eos_token, ... and any other "*_token" string of the config), and every
//   other extra kwarg (enable_thinking, date_string, ...), which override
//   special tokens of the same name.
//
// A ChatTemplate is immutable once loaded; render() may run concurrently.
//
// The template language is the jinja2 subset chat templates use:
//   tags      if/elif/else, for (tuple targets, `if` filter, else, loop.*,
//             break/continue), set (names, tuples, ns.attr, set blocks),
//             macro (defaults, keyword arguments), filter, with, raw,
//             comments, generation, whitespace control (-, +, trim_blocks,
//             lstrip_blocks)
//   values    Python's: str/int/float/bool/None/list/tuple/dict, slicing,
//             `in`, chained comparisons, and/or returning operands, ~
//   methods   str (split, strip, startswith, replace, ...), dict (items,
//             keys, values, get), list (index, count)
//   filters   jinja2's built-ins but batch, filesizeformat, forceescape,
//             format, groupby, pprint, random, slice, striptags, urlencode,
//             urlize, wordwrap, xmlattr; tojson is transformers' json.dumps
//   tests     jinja2's built-ins but escaped
//   globals   range, dict, namespace, raise_exception, strftime_now
// Anything else (include/extends/import/call/recursive loops, *args, the
// missing filters above, printf-style %) fails with an error, never silently.
// Errors are hive::chat_template::
// TemplateError, naming line and column ("chat_template:3:14: unsupported
// filter 'wordwrap'"); a template's own raise_exception("...") throws the
// subclass TemplateRaised, whose message() is the template's text.
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "runtime/text/jinja/errors.hpp"

namespace hive {

class ChatTemplate {
 public:
  // template_name picks one of a list of named templates; by default the
  // one named "default". Without a `chat_template` key, a
  // chat_template.jinja next to the config is used, as transformers does.
  static ChatTemplate from_tokenizer_config(const std::filesystem::path& path,
                                            std::string_view template_name = "");
  // special_tokens: name -> string, passed to the template as variables.
  static ChatTemplate from_string(std::string_view source, nlohmann::ordered_json special_tokens =
                                                               nlohmann::ordered_json::object());

  // messages: an array of message objects; extra_kwargs: an object.
  std::string render(
      const nlohmann::ordered_json& messages, bool add_generation_prompt,
      const nlohmann::ordered_json& extra_kwargs = nlohmann::ordered_json::object()) const;
  // The same with JSON text for messages and kwargs.
  std::string render_json(std::string_view messages_json, bool add_generation_prompt,
                          std::string_view extra_kwargs_json = "{}") const;

  // Renders with exactly these variables (an object) and the global
  // functions, without the message preparation above: for templates that are
  // not chats, and for testing the template language itself.
  std::string render_context(const nlohmann::ordered_json& variables) const;

  const std::string& source() const;
  const nlohmann::ordered_json& special_tokens() const { return special_tokens_; }

 private:
  struct Compiled;
  ChatTemplate(std::shared_ptr<const Compiled> compiled, nlohmann::ordered_json special_tokens);

  std::shared_ptr<const Compiled> compiled_;
  nlohmann::ordered_json special_tokens_;
};

// The special tokens transformers passes to a template, read from a
// tokenizer_config.json object: the standard seven, extra_special_tokens
// given as a dict, and any other "*_token" key with a string (or
// {"content": ...}) value.
nlohmann::ordered_json special_tokens_from_config(const nlohmann::ordered_json& config);

}  // namespace hive
