#include "actors/gateway/websocket_message.hpp"

#include "base/error.hpp"
#include "base/json_reader.hpp"

namespace hive::gateway {

namespace {

using Json = nlohmann::json;

[[noreturn]] void reject(std::string message, std::optional<std::string> param = std::nullopt) {
  throw ClientMessageError{
      "", ApiError{400, std::move(message), "invalid_request_error", std::move(param), std::nullopt}};
}

}  // namespace

ClientMessage parse_client_message(const std::string& text) {
  Json message;
  try {
    message = parse_client_json(text, "the message");
  } catch (const ApiException& e) {
    reject(e.error.message);
  }
  const auto type = message.is_object() ? message.find("type") : message.end();
  if (!message.is_object() || type == message.end() || !type->is_string())
    reject("a message is a JSON object with a \"type\" string", "type");
  const std::string kind = type->get<std::string>();
  ClientMessage out;
  if (kind == "stats") return out;
  const auto id = message.find("id");
  if (kind == "cancel") {
    if (id == message.end() || !id->is_string())
      reject("a cancel message needs the request's \"id\"", "id");
    out.type = ClientMessage::Type::cancel;
    out.id = id->get<std::string>();
    return out;
  }
  if (kind != "start")
    reject(str_cat("unknown message type '", kind, "' (expected start, cancel, stats)"), "type");
  if (id == message.end() || !id->is_string() || id->get<std::string>().empty())
    reject("a start message needs a non-empty \"id\" string", "id");
  out.type = ClientMessage::Type::start;
  out.id = id->get<std::string>();
  out.body = std::move(message);
  out.body.erase("type");
  out.body.erase("id");
  out.body.erase("stream");
  out.endpoint = out.body.contains("messages") ? Endpoint::chat : Endpoint::completions;
  return out;
}

}  // namespace hive::gateway
