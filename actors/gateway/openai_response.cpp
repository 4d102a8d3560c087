#include "actors/gateway/openai_response.hpp"

namespace hive::gateway {

namespace {

using Json = nlohmann::json;

Json chunk(const ResponseHeader& header, Json choices) {
  return {{"id", header.id},
          {"object", header.endpoint == Endpoint::chat ? "chat.completion.chunk" : "text_completion"},
          {"created", header.created},
          {"model", header.model},
          {"choices", std::move(choices)}};
}

}  // namespace

Json usage_json(const Usage& usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
}

Json full_response(const ResponseHeader& header, const std::vector<ChoiceResult>& results,
                   const Usage& usage) {
  const bool chat = header.endpoint == Endpoint::chat;
  Json choices = Json::array();
  for (const ChoiceResult& r : results) {
    Json choice = {{"index", r.index}, {"logprobs", nullptr}, {"finish_reason", r.finish_reason}};
    if (chat)
      choice["message"] = {{"role", "assistant"}, {"content", r.text}};
    else
      choice["text"] = r.text;
    choices.push_back(std::move(choice));
  }
  return {{"id", header.id},
          {"object", chat ? "chat.completion" : "text_completion"},
          {"created", header.created},
          {"model", header.model},
          {"choices", std::move(choices)},
          {"usage", usage_json(usage)}};
}

Json delta_chunk(const ResponseHeader& header, int index, const std::string& text,
                 bool with_role) {
  Json choice = {{"index", index}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
  if (header.endpoint == Endpoint::chat) {
    Json delta = {{"content", text}};
    if (with_role) delta["role"] = "assistant";
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = text;
  }
  return chunk(header, Json::array({std::move(choice)}));
}

Json finish_chunk(const ResponseHeader& header, int index, const std::string& finish_reason) {
  Json choice = {{"index", index}, {"logprobs", nullptr}, {"finish_reason", finish_reason}};
  if (header.endpoint == Endpoint::chat)
    choice["delta"] = Json::object();
  else
    choice["text"] = "";
  return chunk(header, Json::array({std::move(choice)}));
}

Json usage_chunk(const ResponseHeader& header, const Usage& usage) {
  Json out = chunk(header, Json::array());
  out["usage"] = usage_json(usage);
  return out;
}

}  // namespace hive::gateway
