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
#include <span>
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

// A choice's logprobs in the endpoint's shape (the model's raw ones):
//   completions  {"tokens", "token_logprobs", "top_logprobs": [{token: lp}],
//                 "text_offset"}, offsets counted from `text_offset`
//   chat         {"content": [{"token", "logprob", "bytes",
//                 "top_logprobs": [{"token", "logprob", "bytes"}]}]}
nlohmann::json logprobs_json(Endpoint endpoint, const Tokenizer& tokenizer,
                             std::span<const int32_t> token_ids,
                             std::span<const TokenLogprobs> logprobs, size_t text_offset = 0);

// `with_logprobs`: each choice's logprobs (else null).
nlohmann::json full_response(const ResponseHeader& header,
                             const std::vector<ChoiceResult>& results, const Usage& usage,
                             const Tokenizer* with_logprobs = nullptr);

// A choice's text delta; `role` for a chat's first chunk of a choice;
// `logprobs` from logprobs_json, or null.
nlohmann::json delta_chunk(const ResponseHeader& header, int index, const std::string& text,
                           bool with_role, nlohmann::json logprobs = nullptr);
// A choice's last chunk.
nlohmann::json finish_chunk(const ResponseHeader& header, int index,
                            const std::string& finish_reason);
nlohmann::json usage_chunk(const ResponseHeader& header, const Usage& usage);

}  // namespace hive::gateway
