#pragma once
// The OpenAI API's response bodies and stream chunks.
//
//   completion   {"id", "object": "text_completion", "created", "model",
//                 "choices": [{"index", "text", "logprobs", "finish_reason"}],
//                 "usage": {"prompt_tokens", "completion_tokens", "total_tokens"}}
//   chat         {"object": "chat.completion", ..., "choices": [{"index",
//                 "message": {"role": "assistant", "content"}, "logprobs",
//                 "finish_reason"}], "usage"}
//   chunks       the same with "object": "text_completion" (completions) or
//                "chat.completion.chunk" (chat: "delta" instead of "message",
//                the first one with the role); finish_reason null until a
//                choice's last chunk; with include_usage a last chunk with no
//                choices and the usage.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/gateway/generation.hpp"
#include "actors/gateway/openai_request.hpp"

namespace hive::gateway {

struct ResponseHeader {
  std::string id;
  int64_t created = 0;  // Unix seconds
  std::string model;
  Endpoint endpoint = Endpoint::completions;
};

nlohmann::json usage_json(const Usage& usage);

nlohmann::json full_response(const ResponseHeader& header,
                             const std::vector<ChoiceResult>& results, const Usage& usage);

// A choice's text delta; `role` for a chat's first chunk of a choice.
nlohmann::json delta_chunk(const ResponseHeader& header, int index, const std::string& text,
                           bool with_role);
// A choice's last chunk.
nlohmann::json finish_chunk(const ResponseHeader& header, int index,
                            const std::string& finish_reason);
nlohmann::json usage_chunk(const ResponseHeader& header, const Usage& usage);

}  // namespace hive::gateway
