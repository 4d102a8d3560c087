#pragma once
// The body of POST /v1/completions and /v1/chat/completions, read into the
// input processor's RequestInputs. Types are checked here (a wrong type is a
// 400 naming the field); every rule about values is the input processor's.
//
// Fields: model, prompt (a string, token ids, or a list of either) or
// messages ({role, content} with content a string or a list of text parts),
// max_tokens / max_completion_tokens, temperature, top_p, top_k, min_p, n,
// stop (a string or up to 4), seed, presence_penalty, frequency_penalty,
// repetition_penalty, logprobs / top_logprobs, stream, stream_options.
// Every field is applied, accepted and ignored (user, metadata, store,
// service_tier: they do not change the output), or refused by name: a field
// Hive cannot honour (echo, suffix, logit_bias, best_of != n,
// response_format other than text, tools, ...) and an unknown field are a
// 400 naming it, as OpenAI's own server answers, so a client never gets
// output that silently ignored what it asked for.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/engine/input_processor.hpp"

namespace hive::gateway {

enum class Endpoint { completions, chat };

struct ApiRequest {
  Endpoint endpoint = Endpoint::completions;
  std::string model;                 // empty: the served model
  std::vector<RequestInput> prompts;  // one per prompt (several only for completions)
  int64_t n = 1;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  int64_t logprobs = -1;       // top alternatives per token; -1: none
};

// A client's JSON text (a body or a WebSocket message): UTF-8 (RFC 8259;
// else a 400 naming the byte offset), then the JSON reader's rules (nesting
// depth, duplicate keys). Throws ApiException (400) naming `what`.
nlohmann::json parse_client_json(const std::string& text, const char* what);

// Throws ApiException (400) for malformed JSON and wrong types. Request ids
// are `id_prefix`, then "-<prompt index>" when there are several prompts.
ApiRequest parse_api_request(Endpoint endpoint, const std::string& body,
                             const std::string& id_prefix);
// The same from a parsed object.
ApiRequest parse_api_request(Endpoint endpoint, const nlohmann::json& body,
                             const std::string& id_prefix);

}  // namespace hive::gateway
