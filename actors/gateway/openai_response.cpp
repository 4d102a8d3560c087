#include "actors/gateway/openai_response.hpp"

#include <algorithm>

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

Json logprobs_json(Endpoint endpoint, const Tokenizer& tokenizer,
                   std::span<const int32_t> token_ids, std::span<const TokenLogprobs> logprobs,
                   size_t text_offset) {
  const auto token_text = [&](int32_t id) {
    return tokenizer.decode(std::span<const int32_t>(&id, 1), /*skip_special_tokens=*/false);
  };
  const auto bytes = [](const std::string& text) {
    Json out = Json::array();
    for (const char c : text) out.push_back(static_cast<unsigned char>(c));
    return out;
  };
  const size_t n = std::min(token_ids.size(), logprobs.size());
  if (endpoint == Endpoint::chat) {
    Json content = Json::array();
    for (size_t i = 0; i < n; ++i) {
      const std::string token = token_text(token_ids[i]);
      Json top = Json::array();
      for (size_t k = 0; k < logprobs[i].top_token_ids.size(); ++k) {
        const std::string alternative = token_text(logprobs[i].top_token_ids[k]);
        top.push_back({{"token", alternative},
                       {"logprob", logprobs[i].top_logprobs[k]},
                       {"bytes", bytes(alternative)}});
      }
      content.push_back({{"token", token},
                         {"logprob", logprobs[i].logprob},
                         {"bytes", bytes(token)},
                         {"top_logprobs", std::move(top)}});
    }
    return {{"content", std::move(content)}};
  }
  Json tokens = Json::array(), token_logprobs = Json::array(), top = Json::array(),
       offsets = Json::array();
  for (size_t i = 0; i < n; ++i) {
    const std::string token = token_text(token_ids[i]);
    tokens.push_back(token);
    token_logprobs.push_back(logprobs[i].logprob);
    Json alternatives = Json::object();
    for (size_t k = 0; k < logprobs[i].top_token_ids.size(); ++k)
      alternatives[token_text(logprobs[i].top_token_ids[k])] = logprobs[i].top_logprobs[k];
    top.push_back(std::move(alternatives));
    offsets.push_back(text_offset);
    text_offset += token.size();
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", std::move(top)},
          {"text_offset", std::move(offsets)}};
}

Json full_response(const ResponseHeader& header, const std::vector<ChoiceResult>& results,
                   const Usage& usage, const Tokenizer* with_logprobs) {
  const bool chat = header.endpoint == Endpoint::chat;
  Json choices = Json::array();
  for (const ChoiceResult& r : results) {
    Json choice = {{"index", r.index},
                   {"logprobs", with_logprobs ? logprobs_json(header.endpoint, *with_logprobs,
                                                              r.token_ids, r.logprobs)
                                              : Json(nullptr)},
                   {"finish_reason", r.finish_reason}};
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
                 bool with_role, Json logprobs) {
  Json choice = {{"index", index}, {"logprobs", std::move(logprobs)}, {"finish_reason", nullptr}};
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
