#include "actors/gateway/openai_request.hpp"

#include <limits>
#include <map>
#include <set>

#include "actors/gateway/api_error.hpp"
#include "base/json_reader.hpp"
#include "base/json_writer.hpp"
#include "runtime/text/utf8.hpp"

namespace hive::gateway {

namespace {

using Json = nlohmann::json;

// The JSON type names OpenAI's errors use.
const char* type_name(const Json& value) {
  if (value.is_string()) return "a string";
  if (value.is_boolean()) return "a boolean";
  if (value.is_number()) return "a number";
  if (value.is_array()) return "an array";
  if (value.is_object()) return "an object";
  return "null";
}

// Lists a client controls, bounded so one request's work is bounded.
constexpr size_t kMaxPrompts = 256;
constexpr size_t kMaxMessages = 4096;
constexpr size_t kMaxContentParts = 4096;
constexpr size_t kMaxStopStrings = 4;
constexpr size_t kMaxStopBytes = 1024;

// Every field a client may send is applied, ignored as listed here (and in
// the README), or refused by name: a field that would change the output is
// never dropped silently. What a refused field means, when given:
const std::map<std::string, std::string>& refused_fields() {
  static const std::map<std::string, std::string> kRefused = {
      {"functions", "function calling is not supported yet"},
      {"function_call", "function calling is not supported yet"},
      {"reasoning_effort", "reasoning controls are not supported"},
      {"modalities", "only text output is supported"},
      {"audio", "only text output is supported"},
      {"prediction", "predicted outputs are not supported"},
      {"web_search_options", "web search is not supported"},
  };
  return kRefused;
}

// Accepted and ignored: they do not change the output.
const std::set<std::string>& ignored_fields() {
  static const std::set<std::string> kIgnored = {"user", "metadata", "store", "service_tier"};
  return kIgnored;
}

// The fields parse_api_request reads, per endpoint.
const std::set<std::string>& applied_fields(Endpoint endpoint) {
  static const std::set<std::string> kShared = {
      "model", "n", "stream", "stream_options", "temperature", "top_p", "top_k", "min_p",
      "seed", "presence_penalty", "frequency_penalty", "repetition_penalty", "stop",
      "ignore_eos", "logit_bias", "max_tokens", "logprobs"};
  static const std::set<std::string> kCompletions = [] {
    std::set<std::string> fields = kShared;
    fields.insert({"prompt", "echo", "suffix", "best_of"});
    return fields;
  }();
  static const std::set<std::string> kChat = [] {
    std::set<std::string> fields = kShared;
    fields.insert({"messages", "max_completion_tokens", "top_logprobs", "response_format",
                   "tools", "tool_choice", "parallel_tool_calls"});
    return fields;
  }();
  return endpoint == Endpoint::chat ? kChat : kCompletions;
}

void check_known_fields(Endpoint endpoint, const Json& body) {
  for (const auto& [key, value] : body.items()) {
    if (applied_fields(endpoint).count(key) || ignored_fields().count(key)) continue;
    if (const auto it = refused_fields().find(key); it != refused_fields().end()) {
      if (value.is_null()) continue;
      bad_request(str_cat("'", key, "' is not supported: ", it->second), key);
    }
    bad_request(str_cat("unknown field '", key, "'",
                        endpoint == Endpoint::completions && key == "messages"
                            ? " (messages go to /v1/chat/completions)"
                            : ""),
                key);
  }
}

[[noreturn]] void wrong_type(const std::string& field, const char* expected, const Json& value) {
  bad_request(str_cat("'", field, "' must be ", expected, " (got ", type_name(value), ": ",
                      json_text(value), ")"),
              field);
}

// A field that is absent or null is left out.
const Json* field(const Json& body, const char* name) {
  const auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

std::optional<double> number(const Json& body, const char* name) {
  const Json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) wrong_type(name, "a number", *v);
  return v->get<double>();
}

std::optional<int64_t> integer(const Json& body, const char* name) {
  const Json* v = field(body, name);
  if (!v) return std::nullopt;
  const bool fits = v->is_number_integer() &&
                    (!v->is_number_unsigned() ||
                     v->get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max()));
  if (!fits) wrong_type(name, "an integer", *v);
  return v->get<int64_t>();
}

bool boolean(const Json& body, const char* name) {
  const Json* v = field(body, name);
  if (!v) return false;
  if (!v->is_boolean()) wrong_type(name, "a boolean", *v);
  return v->get<bool>();
}

std::vector<int32_t> token_ids(const Json& array, const std::string& name) {
  std::vector<int32_t> ids;
  for (const Json& id : array) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() > std::numeric_limits<int32_t>::max())
      wrong_type(name, "a string, an array of token ids, or an array of either", id);
    ids.push_back(id.get<int32_t>());
  }
  return ids;
}

// prompt: "text", [ids], ["text", ...] or [[ids], ...].
std::vector<Prompt> prompts(const Json& body) {
  const Json* p = field(body, "prompt");
  if (!p) bad_request("'prompt' is required", "prompt");
  const char* expected = "a string, an array of token ids, or an array of either";
  if (p->is_string()) return {p->get<std::string>()};
  if (!p->is_array()) wrong_type("prompt", expected, *p);
  if (p->empty()) bad_request("'prompt' must not be empty", "prompt");
  if ((*p)[0].is_number()) return {token_ids(*p, "prompt")};
  if (p->size() > kMaxPrompts)
    bad_request(str_cat("'prompt' takes at most ", kMaxPrompts, " prompts (got ", p->size(), ")"),
                "prompt");
  std::vector<Prompt> out;
  for (const Json& item : *p) {
    if (item.is_string())
      out.emplace_back(item.get<std::string>());
    else if (item.is_array())
      out.emplace_back(token_ids(item, "prompt"));
    else
      wrong_type("prompt", expected, item);
  }
  return out;
}

// A message's fields: role and content applied, name ignored (no template
// Hive runs reads it), the tool-calling ones refused until tools are.
void check_message_fields(const Json& message) {
  for (const auto& [key, value] : message.items()) {
    if (key == "role" || key == "content" || key == "name") continue;
    if (key == "tool_calls" || key == "tool_call_id" || key == "function_call") {
      if (value.is_null()) continue;
      bad_request(str_cat("a message's '", key, "' is not supported: tool calling is not supported yet"),
                  "messages");
    }
    if (key == "refusal" && value.is_null()) continue;
    bad_request(str_cat("unknown message field '", key, "'"), "messages");
  }
}

// messages: [{"role": ..., "content": "text" | [{"type": "text", "text": ...}]}].
std::vector<ChatMessage> messages(const Json& body) {
  const Json* m = field(body, "messages");
  if (!m) bad_request("'messages' is required", "messages");
  if (!m->is_array()) wrong_type("messages", "an array of messages", *m);
  if (m->size() > kMaxMessages)
    bad_request(str_cat("'messages' takes at most ", kMaxMessages, " messages (got ", m->size(), ")"),
                "messages");
  std::vector<ChatMessage> out;
  for (const Json& message : *m) {
    if (!message.is_object()) wrong_type("messages", "an array of message objects", message);
    check_message_fields(message);
    const Json* role = field(message, "role");
    if (!role || !role->is_string()) bad_request("every message needs a 'role' string", "messages");
    ChatMessage turn{role->get<std::string>(), ""};
    const Json* content = field(message, "content");
    if (content && content->is_string()) {
      turn.content = content->get<std::string>();
    } else if (content && content->is_array()) {
      if (content->size() > kMaxContentParts)
        bad_request(str_cat("a message takes at most ", kMaxContentParts, " content parts"),
                    "messages");
      for (const Json& part : *content) {
        const Json* text = part.is_object() ? field(part, "text") : nullptr;
        if (!text || !text->is_string() || part.value("type", "text") != "text")
          bad_request("only text content parts are supported ({\"type\": \"text\", \"text\": ...})",
                      "messages");
        turn.content += text->get<std::string>();
      }
    } else if (content) {
      wrong_type("messages", "messages whose content is a string or text parts", *content);
    }
    out.push_back(std::move(turn));
  }
  return out;
}

std::vector<std::string> stop_strings(const Json& body) {
  const Json* s = field(body, "stop");
  if (!s) return {};
  if (s->is_string()) return {s->get<std::string>()};
  if (!s->is_array()) wrong_type("stop", "a string or an array of strings", *s);
  if (s->size() > kMaxStopStrings)
    bad_request(str_cat("'stop' takes at most ", kMaxStopStrings, " strings"), "stop");
  std::vector<std::string> out;
  for (const Json& item : *s) {
    if (!item.is_string()) wrong_type("stop", "a string or an array of strings", item);
    out.push_back(item.get<std::string>());
  }
  return out;
}

// The chat fields that ask for a shape of output Hive cannot produce yet are
// refused when they ask for anything but the default.
void check_output_shape(const Json& body) {
  if (const Json* format = field(body, "response_format")) {
    const Json* type = format->is_object() ? field(*format, "type") : nullptr;
    if (!type || !type->is_string())
      bad_request("'response_format' must be an object with a 'type' string", "response_format");
    if (type->get<std::string>() != "text")
      bad_request(str_cat("'response_format' type '", type->get<std::string>(),
                          "' is not supported: structured outputs are not supported yet (only "
                          "'text')"),
                  "response_format");
  }
  const Json* tools = field(body, "tools");
  if (tools && (!tools->is_array() || !tools->empty()))
    bad_request("'tools' is not supported: tool calling is not supported yet", "tools");
  if (const Json* choice = field(body, "tool_choice"); choice && *choice != "none")
    bad_request("'tool_choice' other than \"none\" is not supported: tool calling is not "
                "supported yet",
                "tool_choice");
  // parallel_tool_calls changes nothing without tools.
}

}  // namespace

Json parse_client_json(const std::string& text, const char* what) {
  if (const auto bad = utf8::first_invalid_byte(text)) {
    static const char kHex[] = "0123456789abcdef";
    const auto byte = static_cast<unsigned char>(text[*bad]);
    bad_request(str_cat(what, " is not valid UTF-8 (RFC 8259): byte 0x", kHex[byte >> 4],
                        kHex[byte & 15], " at offset ", *bad, " starts no character"));
  }
  try {
    return parse_json<Json>(text);
  } catch (const JsonError& e) {
    bad_request(str_cat(what, ": ", e.what()));
  }
}

ApiRequest parse_api_request(Endpoint endpoint, const std::string& body_text,
                             const std::string& id_prefix) {
  return parse_api_request(endpoint, parse_client_json(body_text, "the body"), id_prefix);
}

ApiRequest parse_api_request(Endpoint endpoint, const Json& body, const std::string& id_prefix) {
  if (!body.is_object()) bad_request("the body must be a JSON object");
  check_known_fields(endpoint, body);
  if (endpoint == Endpoint::chat) check_output_shape(body);

  ApiRequest request;
  request.endpoint = endpoint;
  if (const Json* model = field(body, "model")) {
    if (!model->is_string()) wrong_type("model", "a string", *model);
    request.model = model->get<std::string>();
  }
  request.stream = boolean(body, "stream");
  if (const Json* options = field(body, "stream_options")) {
    if (!options->is_object()) wrong_type("stream_options", "an object", *options);
    if (!request.stream) bad_request("'stream_options' needs 'stream': true", "stream_options");
    for (const auto& [key, value] : options->items())
      if (key != "include_usage")
        bad_request(str_cat("unknown field 'stream_options.", key, "'"), "stream_options");
    request.include_usage = boolean(*options, "include_usage");
  }
  request.n = integer(body, "n").value_or(1);
  if (const auto best_of = integer(body, "best_of"); best_of && *best_of != request.n)
    bad_request("'best_of' other than n is not supported", "best_of");
  if (boolean(body, "echo")) bad_request("'echo' is not supported", "echo");
  if (field(body, "suffix")) bad_request("'suffix' is not supported", "suffix");
  if (const Json* bias = field(body, "logit_bias"); bias && !bias->empty())
    bad_request("'logit_bias' is not supported", "logit_bias");
  // Completions: "logprobs": N alternatives. Chat: "logprobs": true, with
  // "top_logprobs": N alternatives.
  if (endpoint == Endpoint::chat) {
    const auto top = integer(body, "top_logprobs");
    if (top && !boolean(body, "logprobs"))
      bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
    if (boolean(body, "logprobs")) request.logprobs = top.value_or(0);
  } else if (const auto n = integer(body, "logprobs")) {
    request.logprobs = *n;
  }

  // Every prompt shares the sampling fields.
  RequestInput shared;
  const auto max_completion = integer(body, "max_completion_tokens");
  shared.max_tokens = max_completion ? max_completion : integer(body, "max_tokens");
  shared.temperature = number(body, "temperature");
  shared.top_p = number(body, "top_p");
  if (const auto top_k = integer(body, "top_k"); top_k && *top_k != -1) shared.top_k = top_k;
  if (const auto seed = integer(body, "seed")) {
    if (*seed < 0) bad_request(str_cat("'seed' must be >= 0 (got ", *seed, ")"), "seed");
    shared.seed = static_cast<uint64_t>(*seed);
  }
  shared.min_p = number(body, "min_p");
  shared.presence_penalty = number(body, "presence_penalty");
  shared.frequency_penalty = number(body, "frequency_penalty");
  shared.repetition_penalty = number(body, "repetition_penalty");
  if (request.logprobs >= 0) shared.logprobs = request.logprobs;
  shared.stop = stop_strings(body);
  for (const std::string& stop : shared.stop)
    if (stop.size() > kMaxStopBytes)
      bad_request(str_cat("a stop string takes at most ", kMaxStopBytes, " bytes (got ",
                          stop.size(), ")"),
                  "stop");
  shared.ignore_eos = boolean(body, "ignore_eos");  // vLLM's extension
  shared.n = request.n;
  shared.text_output = true;  // the API answers with text, whatever the prompt

  std::vector<Prompt> inputs;
  if (endpoint == Endpoint::chat)
    inputs.emplace_back(messages(body));
  else
    inputs = prompts(body);
  for (size_t i = 0; i < inputs.size(); ++i) {
    RequestInput input = shared;
    input.id = inputs.size() == 1 ? id_prefix : str_cat(id_prefix, "-", i);
    input.prompt = std::move(inputs[i]);
    request.prompts.push_back(std::move(input));
  }
  return request;
}

}  // namespace hive::gateway
