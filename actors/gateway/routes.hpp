#pragma once
// What each route answers, apart from the completions (which stream and so
// belong to the session): /health, /version, /v1/models, /metrics, the chat
// page, and 401/404/405 in OpenAI's error shape.
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/message.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "actors/gateway/openai_request.hpp"
#include "actors/gateway/server_state.hpp"

namespace hive::gateway {

struct RouteAnswer {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<boost::beast::http::field, std::string>> headers;
  std::optional<Endpoint> completion;  // set: the session runs this completion
};

RouteAnswer answer_route(ServerState& state,
                         const boost::beast::http::request<boost::beast::http::string_body>& request,
                         const std::string& path);

}  // namespace hive::gateway
