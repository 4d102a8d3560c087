#pragma once
// One HTTP connection: reads requests (keep-alive, body and header limits,
// an idle timeout), answers the small routes at once, and runs a
// completion: the whole response when it is done, or Server-Sent Events as
// the text comes (chunked: `data: {...}` per chunk, then `data: [DONE]`).
// A client that goes away mid-request is noticed (a peek at the socket, or
// a failed write) and its request cancelled, so its KV blocks are freed
// within a step.
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "actors/gateway/api_error.hpp"
#include "actors/gateway/boundary.hpp"
#include "actors/gateway/generation.hpp"
#include "actors/gateway/openai_response.hpp"
#include "actors/gateway/server_state.hpp"

namespace hive::gateway {

class HttpSession : public Connection, public std::enable_shared_from_this<HttpSession> {
 public:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  using Response = boost::beast::http::response<boost::beast::http::string_body>;

  HttpSession(boost::asio::ip::tcp::socket socket, std::shared_ptr<ServerState> state);
  void start();
  void close_when_idle() override;
  void drop_requests() override { generation_.reset(); }
  // Hive's own error while serving this connection (the boundary's,
  // boundary.hpp): logged, and the request ends with a 500, or with an
  // error event when its stream has begun.
  void fail(const std::string& cause) noexcept;

 private:
  void read();
  void read_body();
  void on_read(boost::beast::error_code error);
  void handle(Request request);
  void upgrade(Request request);
  void route(const Request& request);
  void send(Response response);
  void send_error(const ApiError& error);
  void send_json(int status, const nlohmann::json& body);
  void close();
  // After an error that ends the connection: stop sending, read and drop
  // what the client still sends (so it can read the answer), then close.
  void linger();
  // After a response: the next request, or close when the server is done.
  void next();

  template <class Handler>
  auto guard(Handler handler) {
    return guarded(shared_from_this(), std::move(handler));
  }

  void complete(const Request& request, Endpoint endpoint);
  void on_delta(const ChoiceDelta& delta);
  void on_choice_done(const ChoiceResult& result);
  void on_done();
  void watch_disconnect();

  // Server-Sent Events, written in order through one queue.
  void start_events();
  void push_event(const std::string& data);
  void write_next_event();
  void end_events();

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::shared_ptr<ServerState> state_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  bool keep_alive_ = false;
  bool closed_ = false;
  bool reading_ = false;           // waiting for a request: idle
  bool response_started_ = false;  // the current request's answer has begun to go out

  // The completion in flight, if any.
  std::shared_ptr<Generation> generation_;
  ApiRequest api_request_;
  ResponseHeader header_;
  std::vector<bool> role_sent_;
  std::vector<size_t> text_sent_;  // per choice: the text's bytes so far (logprobs' text_offset)
  // Events: the header goes first, then chunks; `ending_` once [DONE] is queued.
  std::shared_ptr<boost::beast::http::response<boost::beast::http::empty_body>> event_header_;
  std::deque<std::string> events_;
  std::vector<boost::asio::const_buffer> write_buffers_;  // the events being written
  size_t queued_bytes_ = 0;
  bool writing_ = false;
  bool ending_ = false;
};

}  // namespace hive::gateway
