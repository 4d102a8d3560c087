#pragma once
// A model's tokenizer and chat template, wherever the model is: a Hugging
// Face directory (tokenizer.json, tokenizer_config.json) or a GGUF file
// (its tokenizer.ggml.* and tokenizer.chat_template metadata, turned into
// the same files in memory by gguf_tokenizer.hpp).
#include <filesystem>
#include <string>

#include "runtime/text/chat_template.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace hive {

Tokenizer load_tokenizer(const std::filesystem::path& model);

// Where the chat template is read from, for messages:
// "DIR/tokenizer_config.json" or "FILE.gguf: metadata key 'tokenizer.chat_template'".
std::string chat_template_source(const std::filesystem::path& model);
bool has_chat_template(const std::filesystem::path& model);
ChatTemplate load_chat_template(const std::filesystem::path& model);

}  // namespace hive
