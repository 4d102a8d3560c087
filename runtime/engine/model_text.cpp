#include "runtime/engine/model_text.hpp"

#include "base/error.hpp"
#include "runtime/loader/gguf_config.hpp"
#include "runtime/loader/gguf_tokenizer.hpp"

namespace hive {

Tokenizer load_tokenizer(const std::filesystem::path& model) {
  if (!is_gguf_model(model)) return Tokenizer::from_directory(model.string());
  const HfTokenizerFiles files = gguf_tokenizer_files(GgufFile(model));
  return Tokenizer::from_json(files.tokenizer.dump(), files.config.dump(),
                              model.string() + " (its tokenizer as tokenizer.json)");
}

std::string chat_template_source(const std::filesystem::path& model) {
  if (!is_gguf_model(model)) return (model / "tokenizer_config.json").string();
  return model.string() + ": metadata key 'tokenizer.chat_template'";
}

bool has_chat_template(const std::filesystem::path& model) {
  if (!is_gguf_model(model))
    return std::filesystem::is_regular_file(model / "tokenizer_config.json");
  return GgufFile(model).find("tokenizer.chat_template") != nullptr;
}

ChatTemplate load_chat_template(const std::filesystem::path& model) {
  if (!is_gguf_model(model))
    return ChatTemplate::from_tokenizer_config(model / "tokenizer_config.json");
  const HfTokenizerFiles files = gguf_tokenizer_files(GgufFile(model));
  check(files.chat_template.has_value(), chat_template_source(model), " does not exist");
  return ChatTemplate::from_string(*files.chat_template, special_tokens_from_config(files.config));
}

}  // namespace hive
