#include "actors/gateway/routes.hpp"

#include <ctime>

#include "actors/gateway/api_error.hpp"
#include "actors/gateway/chat_page.hpp"
#include "base/json_writer.hpp"

#ifndef HIVE_VERSION
#error "HIVE_VERSION must be defined (the project's version)"
#endif

namespace hive::gateway {

namespace http = boost::beast::http;

namespace {

RouteAnswer json(int status, const nlohmann::json& body) {
  return {status, "application/json", json_text(body), {}, std::nullopt};
}

RouteAnswer error(const ApiError& e) {
  RouteAnswer answer = json(e.status, e.body());
  if (e.status == 401) answer.headers.emplace_back(http::field::www_authenticate, "Bearer");
  return answer;
}

bool authorized(const ServerState& state, const http::request<http::string_body>& request) {
  if (state.options.api_key.empty()) return true;
  const auto it = request.find(http::field::authorization);
  return it != request.end() && it->value() == "Bearer " + state.options.api_key;
}

RouteAnswer health(ServerState& state) {
  if (state.draining) return json(503, {{"status", "draining"}});
  const EngineMetrics& metrics = state.engine_metrics();
  if (!metrics.stopped_serving.empty())
    return json(503, {{"status", "failed"}, {"error", metrics.stopped_serving}});
  // Ready once every worker has started (a shard may take minutes to load).
  if (!metrics.ready) return json(503, {{"status", "starting"}});
  return json(200, {{"status", "ok"}});
}

RouteAnswer models(const ServerState& state) {
  nlohmann::json model = {{"id", state.options.model_name},
                          {"object", "model"},
                          {"created", static_cast<int64_t>(std::time(nullptr))},
                          {"owned_by", "hive"},
                          {"max_model_len", state.options.max_model_len}};
  return json(200, {{"object", "list"}, {"data", nlohmann::json::array({model})}});
}

}  // namespace

RouteAnswer answer_route(ServerState& state, const http::request<http::string_body>& request,
                         const std::string& path) {
  const bool get = request.method() == http::verb::get;
  const bool post = request.method() == http::verb::post;
  const bool api = path.rfind("/v1/", 0) == 0;
  if (api && !authorized(state, request))
    return error({401, "a valid API key is needed: 'Authorization: Bearer <key>'",
                  "invalid_request_error", std::nullopt, std::string("invalid_api_key")});
  struct Route {
    const char* path;
    http::verb method;
  };
  static const Route kRoutes[] = {
      {"/", http::verb::get},           {"/health", http::verb::get},
      {"/version", http::verb::get},    {"/metrics", http::verb::get},
      {"/v1/models", http::verb::get},  {"/v1/completions", http::verb::post},
      {"/v1/chat/completions", http::verb::post}};
  if (get && path == "/") return {200, "text/html; charset=utf-8", chat_page(), {}, std::nullopt};
  if (get && path == "/health") return health(state);
  if (get && path == "/version") return json(200, {{"version", HIVE_VERSION}});
  if (get && path == "/v1/models") return models(state);
  if (get && path == "/metrics")
    return {200, "text/plain; version=0.0.4; charset=utf-8",
            state.metrics.render(state.engine_metrics(), state.options.model_name), {},
            std::nullopt};
  if (post && path == "/v1/completions") return {200, "", "", {}, Endpoint::completions};
  if (post && path == "/v1/chat/completions") return {200, "", "", {}, Endpoint::chat};
  for (const Route& route : kRoutes) {
    if (path != route.path) continue;
    RouteAnswer answer = error({405,
                                str_cat("'", path, "' takes ", http::to_string(route.method),
                                        ", not ", request.method_string()),
                                "invalid_request_error", std::nullopt, std::nullopt});
    answer.headers.emplace_back(http::field::allow, std::string(http::to_string(route.method)));
    return answer;
  }
  return error({404, str_cat("no route '", path, "'"), "invalid_request_error", std::nullopt,
                std::string("not_found")});
}

}  // namespace hive::gateway
