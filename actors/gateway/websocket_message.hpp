#pragma once
// A client's message on GET /v1/stream (docs/websocket.md), its shape
// checked before the session acts on it:
//
//   {"type": "start", "id": "a", "prompt" | "messages": ..., sampling fields}
//   {"type": "cancel", "id": "a"}      {"type": "stats"}
//
// Whether an id is in flight, and the API fields of a start, are the
// session's and parse_api_request's to judge.
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/gateway/api_error.hpp"
#include "actors/gateway/openai_request.hpp"

namespace hive::gateway {

// The largest message a client may send, and the most the server queues
// for a client that does not read.
inline constexpr size_t kMaxWebSocketMessageBytes = size_t{8} << 20;
inline constexpr size_t kMaxWebSocketQueuedBytes = size_t{4} << 20;

struct ClientMessage {
  enum class Type { start, cancel, stats };
  Type type = Type::stats;
  std::string id;                          // start and cancel: the client's id
  Endpoint endpoint = Endpoint::completions;  // start: chat when it has "messages"
  nlohmann::json body;                     // start: its API fields (type, id, stream removed)
};

// A malformed message: the error frame carries `id` ("" when not known).
struct ClientMessageError {
  std::string id;
  ApiError error;
};

// Throws ClientMessageError.
ClientMessage parse_client_message(const std::string& text);

}  // namespace hive::gateway
