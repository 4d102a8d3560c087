#include "runtime/text/chat_template.hpp"

#include <fstream>
#include <sstream>

#include "base/json_reader.hpp"
#include "runtime/text/chat_messages.hpp"
#include "runtime/text/jinja/globals.hpp"
#include "runtime/text/jinja/lexer.hpp"
#include "runtime/text/jinja/parser.hpp"
#include "runtime/text/jinja/renderer.hpp"
#include "runtime/text/jinja/value_json.hpp"

namespace hive {

using chat_template::Value;

struct ChatTemplate::Compiled {
  explicit Compiled(std::string_view text)
      : original(text),
        source("chat_template", chat_template::normalize_template_text(text)),
        body(chat_template::parse_template(source)) {}

  std::string original;
  chat_template::Source source;
  chat_template::Body body;
};

namespace {

// The global functions never change, so every render shares one scope of
// them (read-only, so concurrent renders are safe).
const chat_template::ScopePtr& global_scope() {
  static const chat_template::ScopePtr scope = chat_template::make_global_scope();
  return scope;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), path.string(), ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A string, or a list of {"name", "template"} from which one is chosen.
std::string select_template(const nlohmann::ordered_json& value, std::string_view name,
                            const std::string& where) {
  if (value.is_string()) {
    check(name.empty() || name == "default", where, ": has a single chat template, not one named '",
          name, "'");
    return value.get<std::string>();
  }
  check(value.is_array(), where, ": chat_template must be a string or a list of named templates");
  const std::string wanted = name.empty() ? "default" : std::string(name);
  for (const auto& entry : value) {
    if (entry.value("name", "") == wanted) return entry.at("template").get<std::string>();
  }
  fail(where, ": no chat template named '", wanted, "'");
}

}  // namespace

nlohmann::ordered_json special_tokens_from_config(const nlohmann::ordered_json& config) {
  const auto token_text = [](const nlohmann::ordered_json& value) -> std::optional<std::string> {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_object() && value.contains("content") && value["content"].is_string()) {
      return value["content"].get<std::string>();
    }
    return std::nullopt;
  };
  nlohmann::ordered_json tokens = nlohmann::ordered_json::object();
  for (const char* name : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                           "cls_token", "mask_token"}) {
    if (!config.contains(name)) continue;
    if (auto text = token_text(config[name])) tokens[name] = *text;
  }
  for (const auto& [key, value] : config.items()) {
    const bool named_token = key.size() > 6 && key.compare(key.size() - 6, 6, "_token") == 0;
    if (named_token && !tokens.contains(key)) {
      if (auto text = token_text(value)) tokens[key] = *text;
    }
  }
  if (config.contains("extra_special_tokens") && config["extra_special_tokens"].is_object()) {
    for (const auto& [key, value] : config["extra_special_tokens"].items()) {
      if (auto text = token_text(value)) tokens[key] = *text;
    }
  }
  return tokens;
}

ChatTemplate::ChatTemplate(std::shared_ptr<const Compiled> compiled,
                           nlohmann::ordered_json special_tokens)
    : compiled_(std::move(compiled)), special_tokens_(std::move(special_tokens)) {}

ChatTemplate ChatTemplate::from_tokenizer_config(const std::filesystem::path& path,
                                                 std::string_view template_name) {
  const auto config = parse_json<nlohmann::ordered_json>(read_file(path), path.string());
  // As in transformers 5, a chat_template.jinja next to the config is the
  // default template even when the config has one of its own; named
  // templates come from the config.
  std::string text;
  const auto jinja = path.parent_path() / "chat_template.jinja";
  const bool named = !template_name.empty() && template_name != "default";
  if (!named && std::filesystem::exists(jinja)) {
    text = read_file(jinja);
  } else if (config.contains("chat_template") && !config["chat_template"].is_null()) {
    text = select_template(config["chat_template"], template_name, path.string());
  } else if (named) {
    fail(path.string(), ": no chat template named '", template_name, "'");
  } else {
    fail(path.string(), ": no chat_template, and no chat_template.jinja next to it");
  }
  return from_string(text, special_tokens_from_config(config));
}

ChatTemplate ChatTemplate::from_string(std::string_view source,
                                       nlohmann::ordered_json special_tokens) {
  check(special_tokens.is_object(), "special tokens must be a JSON object");
  return ChatTemplate(std::make_shared<const Compiled>(source), std::move(special_tokens));
}

const std::string& ChatTemplate::source() const {
  return compiled_->original;
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                 const nlohmann::ordered_json& extra_kwargs) const {
  check(extra_kwargs.is_object(), "extra_kwargs must be a JSON object, got ",
        extra_kwargs.type_name());
  for (const char* reserved : {"messages", "add_generation_prompt"}) {
    check(!extra_kwargs.contains(reserved), "extra_kwargs must not set '", reserved, "'");
  }
  auto context = std::make_shared<chat_template::Scope>(global_scope());
  for (const auto& [name, value] : special_tokens_.items())
    context->set(name, chat_template::from_json(value));
  context->set("tools", Value::none());
  context->set("documents", Value::none());
  for (const auto& [name, value] : extra_kwargs.items())
    context->set(name, chat_template::from_json(value));
  context->set("messages", chat_template::prepare_messages(messages));
  context->set("add_generation_prompt", Value::boolean(add_generation_prompt));
  std::string out;
  chat_template::Renderer(compiled_->source).render(compiled_->body, context, out);
  return out;
}

std::string ChatTemplate::render_context(const nlohmann::ordered_json& variables) const {
  check(variables.is_object(), "template variables must be a JSON object, got ",
        variables.type_name());
  auto context = std::make_shared<chat_template::Scope>(global_scope());
  for (const auto& [name, value] : variables.items())
    context->set(name, chat_template::from_json(value));
  std::string out;
  chat_template::Renderer(compiled_->source).render(compiled_->body, context, out);
  return out;
}

std::string ChatTemplate::render_json(std::string_view messages_json, bool add_generation_prompt,
                                      std::string_view extra_kwargs_json) const {
  const auto messages =
      parse_json<nlohmann::ordered_json>(messages_json, "chat template input: the messages");
  const auto kwargs =
      parse_json<nlohmann::ordered_json>(extra_kwargs_json, "chat template input: the kwargs");
  return render(messages, add_generation_prompt, kwargs);
}

}  // namespace hive
