#pragma once
// Text in, text out for the hive CLI: which model to use when --model is
// omitted, a prompt as plain text or as a one-turn chat, and the generated
// ids streamed back as text.
//
//   const std::string dir = model_dir_or_default(args);
//   const Tokenizer tokenizer = load_tokenizer(dir);
//   const std::vector<int32_t> ids = encode_prompt(tokenizer, dir, text, chat);
//   TextStream stream(tokenizer, ids, stdout, {.stop = {"\n\n"}});
//   generate(model, ids, options, [&](int32_t id) { return stream.write(id); });
//   stream.finish();
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "runtime/engine/output_processor.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "tools/cli/args.hpp"

namespace hive::cli {

// The bundled model: $HIVE_MODEL when set, else hive-moe-target from
// <prefix>/share/hive/models next to an installed binary, else from the
// source tree this binary was built from. Throws if the directory has no
// config.json, saying how to choose another model.
std::filesystem::path default_model_dir();

// The --model flag's directory or .gguf file (an empty one is an error),
// else default_model_dir().
std::string model_dir_or_default(const Args& args);

// The prompt's token ids. chat: `text` becomes the user turn of the model's
// chat template (tokenizer_config.json or the GGUF's), with the assistant turn opened, and
// is tokenized as transformers' apply_chat_template does (no extra special
// tokens); otherwise the text is tokenized as tokenizer(text) does.
std::vector<int32_t> encode_prompt(const Tokenizer& tokenizer,
                                   const std::filesystem::path& model_dir, const std::string& text,
                                   bool chat);

// Writes each generated token's text to `out` as soon as it is complete
// UTF-8 and cannot be the start of a stop string, without special tokens
// (the end-of-sequence token prints nothing); the output processor's
// SampleText does the work.
class TextStream {
 public:
  // `prompt`: the ids the generated ones continue (their text is not written).
  TextStream(const Tokenizer& tokenizer, std::span<const int32_t> prompt, std::FILE* out,
             TextParams params = {});

  // False once a stop string ended the text: generation should stop.
  bool write(int32_t id);
  void finish();  // whatever is held back, then a newline
  // Everything written so far, the final newline included.
  const std::string& text() const { return text_; }

 private:
  void emit(const std::string& piece);

  SampleText sample_;
  std::FILE* out_;
  std::string text_;
};

}  // namespace hive::cli
