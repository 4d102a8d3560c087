#pragma once
// Every rule that turns what a frontend asks for into an engine Request, in
// one place (the CLI, hive run and the gateway all come through here):
//
//   the prompt      text through the tokenizer (tokenizer(text)), chat
//                   messages through the model's chat template
//                   (apply_chat_template), or ids checked against the
//                   vocabulary
//   sampling        generation_config.json's values for what the request
//                   leaves out (temperature, top_k, top_p, min_p,
//                   repetition_penalty), then validated
//   max_tokens      a value given must fit with the prompt in the context
//                   and in a sequence's share of the KV pool; a default
//                   (generation_config's max_new_tokens, else the caller's)
//                   is cut to what they leave
//   text            stop strings and stop ids for the output processor
//
// Errors are InputErrors: the message says what was wrong with the value and
// what was expected, and field() names the request field, so a caller can
// prefix a file and line or answer HTTP 400 with the parameter.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/error.hpp"
#include "runtime/core/request.hpp"
#include "runtime/engine/output_processor.hpp"
#include "runtime/loader/model_config.hpp"
#include "runtime/text/chat_template.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace hive {

class InputError : public Error {
 public:
  InputError(std::string field, const std::string& message)
      : Error(message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

struct ChatMessage {
  std::string role;  // system, user, assistant, ...
  std::string content;
};

// Text (tokenized with special tokens, as tokenizer(text) does), a chat
// (rendered with the assistant turn opened, tokenized without them, as
// apply_chat_template does), or token ids.
using Prompt = std::variant<std::string, std::vector<ChatMessage>, std::vector<int32_t>>;

// The prompt's token ids: text as tokenizer(text) makes them, a chat as
// apply_chat_template(messages, add_generation_prompt=True) does (the
// template is needed only for a chat). Ids are returned as they are.
std::vector<int32_t> encode_prompt(const Prompt& prompt, const Tokenizer& tokenizer,
                                   const ChatTemplate* chat_template);

// A request as a frontend has it: what it left out is nullopt.
struct RequestInput {
  std::string id;
  Prompt prompt;
  std::optional<int64_t> max_tokens;
  std::optional<double> temperature;
  std::optional<int64_t> top_k;
  std::optional<double> top_p;
  std::optional<uint64_t> seed;
  std::optional<double> min_p;
  std::optional<double> presence_penalty;
  std::optional<double> frequency_penalty;
  std::optional<double> repetition_penalty;
  std::optional<int64_t> logprobs;  // top alternatives per token; none: no logprobs
  bool ignore_eos = false;
  std::vector<int32_t> stop_token_ids;
  std::vector<std::string> stop;  // stop strings (text output only)
  // The output is text even for an id prompt (the OpenAI API always answers
  // with text); text and chat prompts always give text.
  bool text_output = false;
  int64_t n = 1;
  int priority = 0;
};

struct ProcessedRequest {
  Request request;
  bool text_output = false;  // a text or chat prompt: the output is text
  TextParams text;           // for the output processor
  bool max_tokens_is_default = false;
};

struct InputLimits {
  // The most tokens, prompt and output, one sequence can hold: the context,
  // or a sequence's share of the KV pool when that is smaller (0: no limit
  // beyond the context).
  int64_t max_sequence_tokens = 0;
  // max_tokens when neither the request nor generation_config.json gives
  // one, for id, text and chat prompts (cut to what the limits leave: the
  // OpenAI API's chat default is all of it).
  int64_t default_max_tokens = 16;
  int64_t default_max_tokens_text = 16;
  int64_t default_max_tokens_chat = 16;
  int64_t max_n = 1;  // the scheduler's max_num_seqs
};

class InputProcessor {
 public:
  // The tokenizer and chat template are read from `model_dir` the first time
  // a text or chat prompt needs them.
  InputProcessor(std::filesystem::path model_dir, ModelConfig model, InputLimits limits);

  // Throws InputError.
  ProcessedRequest process(const RequestInput& input);

  // generation_config.json keys Hive does not apply, for a note.
  const std::vector<std::string>& ignored_generation_keys() const {
    return model_.generation.ignored;
  }
  const Tokenizer& tokenizer();
  const ModelConfig& model_config() const { return model_; }
  const InputLimits& limits() const { return limits_; }
  void set_limits(const InputLimits& limits) { limits_ = limits; }

 private:
  std::vector<int32_t> encode(const Prompt& prompt);
  int64_t max_tokens(const RequestInput& input, int64_t prompt_len, bool& is_default) const;

  std::filesystem::path model_dir_;
  ModelConfig model_;
  InputLimits limits_;
  std::optional<Tokenizer> tokenizer_;
  std::optional<ChatTemplate> chat_template_;
};

}  // namespace hive
