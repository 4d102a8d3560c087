#include "runtime/engine/input_processor.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <tuple>

#include "runtime/engine/model_text.hpp"

namespace hive {

namespace {

template <class... Args>
[[noreturn]] void fail_field(const std::string& field, const Args&... args) {
  throw InputError(field, str_cat(args...));
}

template <class... Args>
void check_field(bool ok, const std::string& field, const Args&... args) {
  if (!ok) fail_field(field, args...);
}

// generation_config.json's values (validated when it was loaded) for what
// the request leaves out; values are checked before they narrow.
SamplingParams sampling_params(const RequestInput& input, const SamplingParams& defaults) {
  SamplingParams p = defaults;
  if (input.temperature) {
    const double t = *input.temperature;
    check_field(t >= 0 && t <= std::numeric_limits<float>::max(), "temperature",
                "temperature must be >= 0 and at most ", std::numeric_limits<float>::max(),
                " (got ", t, ")");
    p.temperature = static_cast<float>(t);
  }
  if (input.top_k) {
    const int64_t k = *input.top_k;
    check_field(k >= 0 && k <= std::numeric_limits<int32_t>::max(), "top_k",
                "top_k must be in [0, ", std::numeric_limits<int32_t>::max(), "] (got ", k, ")");
    p.top_k = static_cast<int>(k);
  }
  if (input.top_p) {
    const double top_p = *input.top_p;
    check_field(top_p > 0 && top_p <= 1, "top_p", "top_p must be in (0, 1] (got ", top_p, ")");
    p.top_p = static_cast<float>(top_p);
  }
  if (input.min_p) {
    const double min_p = *input.min_p;
    check_field(min_p >= 0 && min_p <= 1, "min_p", "min_p must be in [0, 1] (got ", min_p, ")");
    p.min_p = static_cast<float>(min_p);
  }
  for (const auto& [field, value, target] :
       {std::tuple{"presence_penalty", input.presence_penalty, &p.presence_penalty},
        std::tuple{"frequency_penalty", input.frequency_penalty, &p.frequency_penalty}}) {
    if (!value) continue;
    check_field(*value >= -2 && *value <= 2, field, field, " must be in [-2, 2] (got ", *value,
                ")");
    *target = static_cast<float>(*value);
  }
  if (input.repetition_penalty) {
    const double r = *input.repetition_penalty;
    check_field(r > 0 && r <= std::numeric_limits<float>::max(), "repetition_penalty",
                "repetition_penalty must be > 0 and at most ", std::numeric_limits<float>::max(),
                " (got ", r, ")");
    p.repetition_penalty = static_cast<float>(r);
  }
  if (input.logprobs) {
    const int64_t n = *input.logprobs;
    check_field(n >= 0 && n <= kMaxLogprobs, "logprobs", "logprobs must be in [0, ", kMaxLogprobs,
                "] (got ", n, ")");
    p.logprobs = static_cast<int>(n);
  }
  p.seed = input.seed;
  validate(p);
  return p;
}

}  // namespace

InputProcessor::InputProcessor(std::filesystem::path model_dir, ModelConfig model,
                               InputLimits limits)
    : model_dir_(std::move(model_dir)), model_(std::move(model)), limits_(limits) {}

const Tokenizer& InputProcessor::tokenizer() {
  if (!tokenizer_) tokenizer_.emplace(load_tokenizer(model_dir_));
  return *tokenizer_;
}

std::vector<int32_t> encode_prompt(const Prompt& prompt, const Tokenizer& tokenizer,
                                   const ChatTemplate* chat_template) {
  if (const auto* ids = std::get_if<std::vector<int32_t>>(&prompt)) return *ids;
  if (const auto* text = std::get_if<std::string>(&prompt))
    return tokenizer.encode(*text, /*add_special_tokens=*/true);
  check(chat_template != nullptr, "a chat prompt needs a chat template");
  nlohmann::ordered_json turns = nlohmann::ordered_json::array();
  // "developer" is OpenAI's newer name for "system"; the templates know only
  // the older one.
  for (const ChatMessage& m : std::get<std::vector<ChatMessage>>(prompt))
    turns.push_back({{"role", m.role == "developer" ? "system" : m.role}, {"content", m.content}});
  std::string text;
  try {
    text = chat_template->render(turns, /*add_generation_prompt=*/true);
  } catch (const chat_template::TemplateRaised& e) {
    // The template refused this conversation (roles out of order, say): the
    // client's to mend.
    throw InputError("messages", str_cat("the model's chat template refuses these messages: ",
                                         e.message()));
  } catch (const chat_template::TemplateTooLarge& e) {
    throw InputError("messages", str_cat("these messages are too large for the chat template: ",
                                         e.what()));
  }
  return tokenizer.encode(text, /*add_special_tokens=*/false);
}

std::vector<int32_t> InputProcessor::encode(const Prompt& prompt) {
  if (const auto* ids = std::get_if<std::vector<int32_t>>(&prompt)) {
    for (const int32_t id : *ids)
      check_field(id >= 0 && id < model_.vocab_size, "prompt", "prompt token id ", id,
                  " is out of range [0, ", model_.vocab_size, ")");
    return *ids;
  }
  if (const auto* messages = std::get_if<std::vector<ChatMessage>>(&prompt)) {
    check_field(!messages->empty(), "messages", "a chat needs at least one message");
    for (size_t i = 0; i < messages->size(); ++i) {
      const std::string& role = (*messages)[i].role;
      check_field(!role.empty(), "messages", "every message needs a role");
      check_field(role == "system" || role == "developer" || role == "user" || role == "assistant",
                  "messages", "messages[", i, "] has the role '", role,
                  "'; the roles are system (or developer), user and assistant");
    }
    if (!chat_template_) {
      check_field(has_chat_template(model_dir_), "messages",
                  "a chat needs the model's chat template, but ", chat_template_source(model_dir_),
                  " does not exist");
      chat_template_.emplace(load_chat_template(model_dir_));
    }
  }
  return encode_prompt(prompt, tokenizer(), chat_template_ ? &*chat_template_ : nullptr);
}

int64_t InputProcessor::max_tokens(const RequestInput& input, int64_t prompt_len,
                                   bool& is_default) const {
  const int64_t context = model_.max_position_embeddings;
  const int64_t limit = limits_.max_sequence_tokens > 0 ? limits_.max_sequence_tokens : context;
  const int64_t room = limit > 0 ? limit - prompt_len : std::numeric_limits<int32_t>::max();
  check_field(room >= 1, "prompt", "the prompt (", prompt_len, " tokens) leaves no room in ",
              limit == context ? "the model's context" : "a sequence's KV pool", " of ", limit,
              " tokens");
  is_default = !input.max_tokens;
  if (!input.max_tokens) {
    const int64_t fallback =
        std::holds_alternative<std::string>(input.prompt)          ? limits_.default_max_tokens_text
        : std::holds_alternative<std::vector<ChatMessage>>(input.prompt) ? limits_.default_max_tokens_chat
                                                                         : limits_.default_max_tokens;
    return std::min(model_.generation.max_tokens_or(fallback), room);
  }
  const int64_t asked = *input.max_tokens;
  check_field(asked >= 1, "max_tokens", "max_tokens must be >= 1 (got ", asked, ")");
  check_field(context == 0 || asked <= context - prompt_len, "max_tokens", "prompt (", prompt_len,
              " tokens) + max_tokens (", asked, ") exceed the model's context length of ",
              context, " tokens (max_position_embeddings)");
  check_field(asked <= room, "max_tokens", "prompt (", prompt_len, " tokens) + max_tokens (",
              asked, ") exceed the ", limit, " tokens a sequence's share of the KV pool holds");
  return asked;
}

ProcessedRequest InputProcessor::process(const RequestInput& input) {
  ProcessedRequest out;
  Request& r = out.request;
  r.id = input.id;
  check_field(!r.id.empty(), "id", "a request needs an id");
  out.text_output =
      input.text_output || !std::holds_alternative<std::vector<int32_t>>(input.prompt);
  check_field(out.text_output || input.stop.empty(), "stop",
              "stop strings need text output (they are matched on the text)");
  for (const std::string& stop : input.stop)
    check_field(!stop.empty(), "stop", "stop strings must not be empty");
  r.prompt_token_ids = encode(input.prompt);
  check_field(!r.prompt_token_ids.empty(), "prompt", "the prompt has no tokens");
  r.stop.max_tokens = max_tokens(input, static_cast<int64_t>(r.prompt_token_ids.size()),
                                 out.max_tokens_is_default);
  r.stop.ignore_eos = input.ignore_eos;
  r.stop.stop_token_ids = input.stop_token_ids;
  check_field(input.n >= 1 && input.n <= limits_.max_n, "n", "n must be in [1, ", limits_.max_n,
              "] (got ", input.n, ")");
  r.n = static_cast<int>(input.n);
  r.priority = input.priority;

  r.sampling = sampling_params(input, model_.generation.sampling());

  out.text.stop = input.stop;
  out.text.stop_token_ids = input.stop_token_ids;
  if (!input.ignore_eos)
    for (const int64_t id : model_.eos_token_ids)
      out.text.stop_token_ids.push_back(static_cast<int32_t>(id));
  return out;
}

}  // namespace hive
