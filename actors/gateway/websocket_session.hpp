#pragma once
// GET /v1/stream: one WebSocket carries many requests (docs/websocket.md).
//
//   client  {"type": "start", "id": "a", "prompt" | "messages": ..., sampling fields}
//           {"type": "cancel", "id": "a"}      {"type": "stats"}
//   server  {"type": "token", "id", "index", "text", "token_ids"}
//           {"type": "done", "id", "finish_reasons", "usage"}
//           {"type": "error", "id"?, "message", "code", "param"?}
//           {"type": "stats", "running", "waiting", "kv_cache_usage", ...}
//
// The ids are the client's, unique among its requests in flight. Messages
// go out through one bounded queue: a client that stops reading while it
// grows past 4 MiB is disconnected with a close frame saying so, and its
// requests are cancelled.
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "actors/gateway/boundary.hpp"
#include "actors/gateway/generation.hpp"
#include "actors/gateway/server_state.hpp"
#include "actors/gateway/websocket_message.hpp"

namespace hive::gateway {

class WebSocketSession : public Connection, public std::enable_shared_from_this<WebSocketSession> {
 public:
  WebSocketSession(boost::beast::tcp_stream stream, std::shared_ptr<ServerState> state);
  void start(boost::beast::http::request<boost::beast::http::string_body> upgrade);
  // The server is done (no request is in flight): its messages go out, then
  // a close frame.
  void close_when_idle() override;
  void drop_requests() override { requests_.clear(); }
  // Hive's own error on this connection (the boundary's, boundary.hpp):
  // logged, and the connection closes with the cause in its close frame,
  // its requests cancelled.
  void fail(const std::string& cause) noexcept;

 private:
  template <class Handler>
  auto guard(Handler handler) {
    return guarded(shared_from_this(), std::move(handler));
  }

  void read();
  void on_message(const std::string& text);
  void start_request(const ClientMessage& message);
  void end_request(const std::string& id);
  void cancel_request(const std::string& id);
  void send_stats();
  void send(nlohmann::json message);
  void send_error(const std::string& id, int code, const std::string& message,
                  const std::optional<std::string>& param = std::nullopt);
  void write_next();
  void send_close();
  // Cancels the connection's requests; a reason is sent in a close frame.
  void close(const std::string& reason);

  boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
  boost::beast::flat_buffer buffer_;
  std::shared_ptr<ServerState> state_;
  std::map<std::string, std::shared_ptr<Generation>> requests_;  // by the client's id
  std::deque<std::string> outbox_;
  size_t queued_bytes_ = 0;
  bool writing_ = false;
  bool closed_ = false;
  std::string close_reason_;  // sent in a close frame once the write in progress ends
  bool closing_when_flushed_ = false;
  boost::asio::steady_timer close_deadline_;
  int64_t stats_tokens_ = 0;  // the engine's generated tokens at the last stats
  std::chrono::steady_clock::time_point stats_time_ = std::chrono::steady_clock::now();
};

}  // namespace hive::gateway
