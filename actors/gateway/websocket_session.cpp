#include "actors/gateway/websocket_session.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <cstdio>
#include <utility>

#include "actors/gateway/api_error.hpp"
#include "actors/gateway/openai_request.hpp"
#include "actors/gateway/openai_response.hpp"
#include "actors/gateway/websocket_message.hpp"
#include "base/json_writer.hpp"

namespace hive::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using Json = nlohmann::json;

WebSocketSession::WebSocketSession(beast::tcp_stream stream, std::shared_ptr<ServerState> state)
    : ws_(std::move(stream)),
      state_(std::move(state)),
      close_deadline_(beast::get_lowest_layer(ws_).get_executor()) {}

void WebSocketSession::start(beast::http::request<beast::http::string_body> upgrade) {
  beast::get_lowest_layer(ws_).expires_never();
  ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
  ws_.read_message_max(kMaxWebSocketMessageBytes);
  auto request = std::make_shared<beast::http::request<beast::http::string_body>>(std::move(upgrade));
  ws_.async_accept(*request, guard([this, request](beast::error_code error) {
                     if (error) return;
                     read();
                   }));
}

void WebSocketSession::fail(const std::string& cause) noexcept {
  std::fprintf(stderr, "hive serve: internal error on a WebSocket (it closes): %s\n",
               cause.c_str());
  try {
    close(str_cat("internal error: ", cause));
  } catch (...) {
    closed_ = true;
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
  }
}

void WebSocketSession::read() {
  ws_.async_read(buffer_, guard([this](beast::error_code error, size_t) {
                   if (error) return close("");  // the client closed, or sent too much at once
                   const std::string text = beast::buffers_to_string(buffer_.data());
                   buffer_.consume(buffer_.size());
                   on_message(text);
                   if (!closed_) read();
                 }));
}

void WebSocketSession::on_message(const std::string& text) {
  ClientMessage message;
  try {
    message = parse_client_message(text);
  } catch (const ClientMessageError& e) {
    return send_error(e.id, e.error.status, e.error.message, e.error.param);
  }
  switch (message.type) {
    case ClientMessage::Type::start: return start_request(message);
    case ClientMessage::Type::cancel: return cancel_request(message.id);
    case ClientMessage::Type::stats: return send_stats();
  }
}

void WebSocketSession::start_request(const ClientMessage& message) {
  const std::string& id = message.id;
  if (requests_.count(id))
    return send_error(id, 400, str_cat("a request '", id, "' is already in flight here"), "id");
  ServerState& st = *state_;
  if (st.draining) return send_error(id, 503, "the server is shutting down");
  if (st.in_flight >= st.options.max_queued_requests) {
    ++st.metrics.rejected_requests;
    return send_error(id, 429, str_cat("the server has ", st.in_flight,
                                       " requests in flight, its limit; retry later"));
  }
  std::vector<ProcessedRequest> processed;
  ApiRequest request;
  try {
    request = parse_api_request(message.endpoint, message.body, st.new_id("ws-"));
    if (!request.model.empty() && request.model != st.options.model_name)
      return send_error(id, 404, str_cat("the model '", request.model, "' does not exist"),
                        "model");
    for (const RequestInput& input : request.prompts) processed.push_back(st.inputs.process(input));
  } catch (const ApiException& e) {
    return send_error(id, e.error.status, e.error.message, e.error.param);
  } catch (const InputError& e) {
    return send_error(id, 400, e.what(), e.field());
  }
  // The callbacks hold the session while the request runs; done, it drops them.
  auto self = shared_from_this();
  Generation::Callbacks callbacks{
      [self, id](const ChoiceDelta& delta) {
        if (delta.text.empty() && delta.token_ids.empty()) return;  // logprobs ride with ids
        Json token = {{"type", "token"},
                        {"id", id},
                        {"index", delta.index},
                        {"text", delta.text},
                        {"token_ids", delta.token_ids}};
        if (!delta.logprobs.empty())
          token["logprobs"] = logprobs_json(Endpoint::chat, self->state_->inputs.tokenizer(),
                                              delta.token_ids, delta.logprobs)["content"];
        self->send(std::move(token));
      },
      {},
      [self, id, state = state_] {
        self->end_request(id);
        state->release();  // after the last message is queued: a drain closes flushed sessions
      },
      [self, id, state = state_](const std::string& cause) {
        std::fprintf(stderr, "hive serve: internal error in a WebSocket request: %s\n",
                     cause.c_str());
        try {
          self->requests_.erase(id);
          self->send_error(id, 500, str_cat("internal error: ", cause));
        } catch (...) {
          self->fail(cause);
        }
        state->release();
      }};
  auto generation =
      std::make_shared<Generation>(st.engine, *st.outputs, std::move(processed),
                                   static_cast<int>(request.n), st.metrics, std::move(callbacks));
  requests_[id] = generation;
  ++st.in_flight;
  try {
    generation->start();
  } catch (const std::exception& e) {
    generation->cancel();
    requests_.erase(id);
    st.release();
    send_error(id, 503, e.what());
  }
}

// The request's last message: its finish reasons and usage, or its error.
void WebSocketSession::end_request(const std::string& id) {
  const auto it = requests_.find(id);
  if (it == requests_.end()) return;
  const std::shared_ptr<Generation> generation = std::move(it->second);
  requests_.erase(it);
  Json reasons = Json::array();
  std::string error;
  for (const ChoiceResult& r : generation->results()) {
    reasons.push_back(r.finish_reason);
    if (!r.error.empty()) error = r.error;
  }
  if (!error.empty()) return send_error(id, 500, error);
  send({{"type", "done"},
        {"id", id},
        {"finish_reasons", std::move(reasons)},
        {"usage", usage_json(generation->usage())}});
}

void WebSocketSession::cancel_request(const std::string& id) {
  const auto it = requests_.find(id);
  if (it == requests_.end())
    return send_error(id, 404, str_cat("no request '", id, "' is in flight here"), "id");
  it->second->cancel();  // its done message follows, finish reason "abort"
}

void WebSocketSession::send_stats() {
  const EngineMetrics& m = state_->engine_metrics();
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - stats_time_).count();
  const double tokens_per_second =
      seconds > 0 ? static_cast<double>(m.num_generated_tokens - stats_tokens_) / seconds : 0.0;
  stats_tokens_ = m.num_generated_tokens;
  stats_time_ = now;
  send({{"type", "stats"},
        {"running", m.num_running},
        {"waiting", m.num_waiting},
        {"requests_in_flight", state_->in_flight},
        {"kv_cache_usage", m.num_blocks > 0 ? 1.0 - static_cast<double>(m.num_free_blocks) /
                                                        static_cast<double>(m.num_blocks)
                                            : 0.0},
        {"generation_tokens_per_second", tokens_per_second}});
}

void WebSocketSession::send_error(const std::string& id, int code, const std::string& message,
                                  const std::optional<std::string>& param) {
  // A parser's message may quote much of the input: a clear error needs
  // its start only.
  constexpr size_t kMaxMessage = 500;
  Json error = {{"type", "error"},
                {"message", message.size() > kMaxMessage ? message.substr(0, kMaxMessage) + "..."
                                                         : message},
                {"code", code}};
  if (!id.empty()) error["id"] = id;
  if (param) error["param"] = *param;
  send(std::move(error));
}

void WebSocketSession::send(Json message) {
  if (closed_) return;
  outbox_.push_back(json_text(message));
  queued_bytes_ += outbox_.back().size();
  if (queued_bytes_ > kMaxWebSocketQueuedBytes)
    return close(str_cat("the client reads too slowly: over ", kMaxWebSocketQueuedBytes,
                         " bytes queued"));
  if (!writing_) write_next();
}

void WebSocketSession::close_when_idle() {
  closing_when_flushed_ = true;
  if (!writing_) write_next();
}

void WebSocketSession::write_next() {
  if (!closed_ && outbox_.empty() && closing_when_flushed_) {
    closed_ = true;
    close_reason_ = "the server is shutting down";
    return send_close();
  }
  if (closed_ || outbox_.empty()) return;  // after close(), only the close frame goes out
  writing_ = true;
  ws_.text(true);
  ws_.async_write(asio::buffer(outbox_.front()), guard([this](beast::error_code error, size_t) {
                    writing_ = false;
                    queued_bytes_ -= outbox_.front().size();
                    outbox_.pop_front();
                    if (error) return close("");
                    if (!close_reason_.empty()) return send_close();
                    write_next();
                  }));
}

void WebSocketSession::send_close() {
  const std::string reason = std::exchange(close_reason_, {});
  ws_.async_close(websocket::close_reason(websocket::close_code::policy_error, reason),
                  [self = shared_from_this()](beast::error_code) {});
}

void WebSocketSession::close(const std::string& reason) {
  if (closed_) return;
  closed_ = true;
  for (auto& [id, generation] : requests_) generation->cancel();
  if (reason.empty()) return;
  // The reason goes out in a close frame (its payload holds 123 bytes),
  // after the write in progress; a client that never takes that write is
  // cut off after 10 seconds.
  close_reason_ = reason.substr(0, 123);
  if (!writing_) return send_close();
  close_deadline_.expires_after(std::chrono::seconds(10));
  close_deadline_.async_wait(guard([this](beast::error_code error) {
    if (error) return;
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
  }));
}

}  // namespace hive::gateway
