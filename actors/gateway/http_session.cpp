#include "actors/gateway/http_session.hpp"

#include <boost/asio/dispatch.hpp>
#include <array>
#include <functional>
#include <boost/beast/core/buffers_cat.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/write.hpp>
#include <cstdio>
#include <ctime>

#include "actors/gateway/routes.hpp"
#include "actors/gateway/websocket_session.hpp"
#include "base/json_writer.hpp"

namespace hive::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

// A client that reads nothing while its stream grows past this is dropped
// (its request cancelled): the server never buffers without bound.
constexpr size_t kMaxQueuedEventBytes = size_t{16} << 20;

// The value of `name` in the target's query string (not URL-decoded: keys
// are plain), or "" when absent.
std::string query_parameter(const std::string& target, const std::string& name) {
  const size_t query = target.find('?');
  if (query == std::string::npos) return "";
  const std::string pair = name + "=";
  for (size_t at = query + 1; at < target.size();) {
    const size_t end = std::min(target.find('&', at), target.size());
    if (target.compare(at, pair.size(), pair) == 0)
      return target.substr(at + pair.size(), end - at - pair.size());
    at = end + 1;
  }
  return "";
}

}  // namespace

HttpSession::HttpSession(asio::ip::tcp::socket socket, std::shared_ptr<ServerState> state)
    : stream_(std::move(socket)), state_(std::move(state)) {}

void HttpSession::start() {
  asio::dispatch(stream_.get_executor(), guard([this] { read(); }));
}

void HttpSession::fail(const std::string& cause) noexcept {
  std::fprintf(stderr, "hive serve: internal error on a connection (its request ends): %s\n",
               cause.c_str());
  try {
    if (closed_) return;
    if (const std::shared_ptr<Generation> generation = std::move(generation_)) generation->cancel();
    if (!response_started_) {
      // Nothing of the answer went out yet: the client gets a 500 and the
      // connection ends after it.
      keep_alive_ = false;
      return send_error({500, str_cat("internal error: ", cause), "internal_error", std::nullopt,
                         std::nullopt});
    }
    if (api_request_.stream && !ending_) {
      // An event stream: the error event, then [DONE].
      push_event(json_text(
          ApiError{500, str_cat("internal error: ", cause), "internal_error", std::nullopt,
                   std::nullopt}
              .body()));
      keep_alive_ = false;
      return end_events();
    }
  } catch (...) {
    // Falls through: the connection ends without an answer.
  }
  close();
}

void HttpSession::close_when_idle() {
  if (reading_) close();  // else next() closes after the response in progress
}

void HttpSession::next() {
  if (!keep_alive_) return linger();
  if (state_->draining && state_->in_flight == 0) return close();
  read();
}

void HttpSession::linger() {
  beast::error_code ignored;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  stream_.expires_after(std::chrono::seconds(10));
  auto discard = std::make_shared<std::array<char, 65536>>();
  auto drop = std::make_shared<std::function<void(beast::error_code, size_t)>>();
  *drop = [self = shared_from_this(), discard, drop](beast::error_code error, size_t) {
    if (error) {
      *drop = nullptr;  // break the cycle
      return self->close();
    }
    self->stream_.async_read_some(asio::buffer(*discard), *drop);
  };
  stream_.async_read_some(asio::buffer(*discard), *drop);
}

void HttpSession::read() {
  reading_ = true;
  response_started_ = false;
  parser_.emplace();
  parser_->body_limit(state_->options.max_body_bytes);
  parser_->header_limit(static_cast<std::uint32_t>(state_->options.max_header_bytes));
  stream_.expires_after(state_->options.idle_timeout);
  http::async_read_header(stream_, buffer_, *parser_, guard([this](beast::error_code error, size_t) {
                            if (error) return on_read(error);
                            read_body();
                          }));
}

// A client that sent "Expect: 100-continue" (curl does for bodies over
// 1 KiB) waits for this answer before it sends the body.
void HttpSession::read_body() {
  const auto expect = parser_->get().find(http::field::expect);
  const auto rest = [this] {
    http::async_read(stream_, buffer_, *parser_,
                     guard([this](beast::error_code error, size_t) { on_read(error); }));
  };
  if (expect == parser_->get().end() || !beast::iequals(expect->value(), "100-continue"))
    return rest();
  auto go_on = std::make_shared<http::response<http::empty_body>>(http::status::continue_, 11);
  http::async_write(stream_, *go_on, guard([this, go_on, rest](beast::error_code error, size_t) {
                      if (error) return close();
                      rest();
                    }));
}

void HttpSession::on_read(beast::error_code error) {
  reading_ = false;
  if (error == http::error::body_limit) {
    keep_alive_ = false;
    return send_error({413, str_cat("the request body exceeds ", state_->options.max_body_bytes,
                                    " bytes"),
                       "invalid_request_error", std::nullopt, std::nullopt});
  }
  if (error == http::error::header_limit) {
    keep_alive_ = false;
    return send_error({431, str_cat("the request headers exceed ",
                                    state_->options.max_header_bytes, " bytes"),
                       "invalid_request_error", std::nullopt, std::nullopt});
  }
  if (error) return close();  // the client closed, timed out or sent no HTTP
  stream_.expires_never();
  handle(parser_->release());
}

void HttpSession::handle(Request request) {
  // While the server drains, a request is answered and the connection ends.
  keep_alive_ = request.keep_alive() && !state_->draining;
  if (beast::websocket::is_upgrade(request)) return upgrade(std::move(request));
  try {
    route(request);
  } catch (const ApiException& e) {
    send_error(e.error);
  } catch (const InputError& e) {
    send_error({400, e.what(), "invalid_request_error", e.field(), std::nullopt});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hive serve: internal error answering %s: %s\n",
                 std::string(request.target().substr(0, 200)).c_str(), e.what());
    send_error({500, e.what(), "internal_error", std::nullopt, std::nullopt});
  }
}

// GET /v1/stream as a WebSocket: the connection becomes a WebSocketSession.
// Browsers cannot set headers on a WebSocket, so the API key may also come
// as ?api_key=.
void HttpSession::upgrade(Request request) {
  const std::string target(request.target());
  const std::string path = target.substr(0, target.find('?'));
  if (path != "/v1/stream")
    return send_error({404, str_cat("no WebSocket endpoint '", path, "' (it is /v1/stream)"),
                       "invalid_request_error", std::nullopt, std::string("not_found")});
  const std::string& key = state_->options.api_key;
  const auto auth = request.find(http::field::authorization);
  const bool authorized = key.empty() ||
                          (auth != request.end() && auth->value() == "Bearer " + key) ||
                          query_parameter(target, "api_key") == key;
  if (!authorized)
    return send_error({401, "a valid API key is needed: 'Authorization: Bearer <key>' or ?api_key=",
                       "invalid_request_error", std::nullopt, std::string("invalid_api_key")});
  auto session = std::make_shared<WebSocketSession>(std::move(stream_), state_);
  state_->add(session);
  session->start(std::move(request));
}

void HttpSession::route(const Request& request) {
  const std::string target(request.target());
  const std::string path = target.substr(0, target.find('?'));
  const RouteAnswer answer = answer_route(*state_, request, path);
  if (answer.completion) return complete(request, *answer.completion);
  Response response{static_cast<http::status>(answer.status), request.version()};
  response.set(http::field::content_type, answer.content_type);
  for (const auto& [name, value] : answer.headers) response.set(name, value);
  response.body() = answer.body;
  send(std::move(response));
}

void HttpSession::send(Response response) {
  response.set(http::field::server, "hive");
  response.keep_alive(keep_alive_);
  response.prepare_payload();
  auto message = std::make_shared<Response>(std::move(response));
  stream_.expires_after(state_->options.write_timeout);
  response_started_ = true;
  http::async_write(stream_, *message, guard([this, message](beast::error_code error, size_t) {
                      if (error) return close();
                      next();
                    }));
}

void HttpSession::send_error(const ApiError& error) {
  Response response{static_cast<http::status>(error.status), 11};
  response.set(http::field::content_type, "application/json");
  if (error.status == 429) response.set(http::field::retry_after, "1");
  if (error.status == 401) response.set(http::field::www_authenticate, "Bearer");
  response.body() = json_text(error.body());
  send(std::move(response));
}

void HttpSession::send_json(int status, const nlohmann::json& body) {
  Response response{static_cast<http::status>(status), 11};
  response.set(http::field::content_type, "application/json");
  response.body() = json_text(body);
  send(std::move(response));
}

void HttpSession::close() {
  if (closed_) return;
  closed_ = true;
  if (generation_) generation_->cancel();
  beast::error_code ignored;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  stream_.socket().close(ignored);
}

void HttpSession::complete(const Request& request, Endpoint endpoint) {
  ServerState& st = *state_;
  if (st.draining)
    throw ApiException{{503, "the server is shutting down", "service_unavailable", std::nullopt,
                        std::nullopt}};
  if (st.in_flight >= st.options.max_queued_requests) {
    ++st.metrics.rejected_requests;
    throw ApiException{{429,
                        str_cat("the server has ", st.in_flight,
                                " requests in flight, its limit; retry later"),
                        "rate_limit_exceeded", std::nullopt, std::nullopt}};
  }
  const std::string id = st.new_id(endpoint == Endpoint::chat ? "chatcmpl-" : "cmpl-");
  api_request_ = parse_api_request(endpoint, request.body(), id);
  if (!api_request_.model.empty() && api_request_.model != st.options.model_name)
    throw ApiException{{404,
                        str_cat("the model '", api_request_.model, "' does not exist; this server has '",
                                st.options.model_name, "'"),
                        "invalid_request_error", std::string("model"),
                        std::string("model_not_found")}};
  std::vector<ProcessedRequest> processed;
  for (const RequestInput& input : api_request_.prompts) processed.push_back(st.inputs.process(input));
  header_ = {id, static_cast<int64_t>(std::time(nullptr)), st.options.model_name, endpoint};
  role_sent_.assign(processed.size() * static_cast<size_t>(api_request_.n), false);
  text_sent_.assign(role_sent_.size(), 0);

  // The callbacks hold the session until the generation is done (then
  // generation_ is dropped): a client that leaves cancels it, so it ends.
  auto self = shared_from_this();
  Generation::Callbacks callbacks{
      [self](const ChoiceDelta& delta) { self->on_delta(delta); },
      [self](const ChoiceResult& result) { self->on_choice_done(result); },
      [self, state = state_] {
        self->on_done();
        state->release();  // after the answer is queued: a drain closes flushed sessions
      },
      [self, state = state_](const std::string& cause) {
        self->fail(cause);
        state->release();
      }};
  generation_ = std::make_shared<Generation>(st.engine, *st.outputs, std::move(processed),
                                             static_cast<int>(api_request_.n), st.metrics,
                                             std::move(callbacks));
  ++st.in_flight;
  try {
    generation_->start();
  } catch (const std::exception& e) {
    generation_->cancel();
    generation_.reset();
    st.release();
    throw ApiException{{503, e.what(), "service_unavailable", std::nullopt, std::nullopt}};
  }
  if (api_request_.stream) start_events();
  watch_disconnect();
}

void HttpSession::watch_disconnect() {
  // Readable while a completion runs means the client closed (nothing to
  // read) or sent its next request early (bytes to read: it is there).
  std::weak_ptr<Generation> watched = generation_;
  stream_.socket().async_wait(asio::ip::tcp::socket::wait_read,
                              guard([this, watched](beast::error_code error) {
                                if (!generation_ || generation_ != watched.lock() ||
                                    generation_->done())
                                  return;  // a stale watch
                                beast::error_code available_error;
                                if (!error && stream_.socket().available(available_error) > 0 &&
                                    !available_error)
                                  return;
                                close();  // cancels the generation
                              }));
}

// After fail() the generation is no longer this session's: its late events
// find generation_ empty.
void HttpSession::on_delta(const ChoiceDelta& delta) {
  if (!generation_ || !api_request_.stream || closed_) return;
  const auto index = static_cast<size_t>(delta.index);
  const bool with_role = header_.endpoint == Endpoint::chat && !role_sent_[index];
  const bool with_logprobs = api_request_.logprobs >= 0 && !delta.logprobs.empty();
  if (delta.text.empty() && !with_role && !with_logprobs) return;
  role_sent_[index] = true;
  nlohmann::json logprobs = nullptr;
  if (with_logprobs)
    logprobs = logprobs_json(header_.endpoint, state_->inputs.tokenizer(), delta.token_ids,
                             delta.logprobs, text_sent_[index]);
  text_sent_[index] += delta.text.size();
  push_event(json_text(delta_chunk(header_, delta.index, delta.text, with_role, std::move(logprobs))));
}

void HttpSession::on_choice_done(const ChoiceResult& result) {
  if (!generation_ || !api_request_.stream || closed_) return;
  if (!result.error.empty()) {
    push_event(json_text(
        ApiError{500, result.error, "internal_error", std::nullopt, std::nullopt}.body()));
    return;
  }
  push_event(json_text(finish_chunk(header_, result.index, result.finish_reason)));
}

void HttpSession::on_done() {
  const std::shared_ptr<Generation> generation = std::move(generation_);
  if (!generation || closed_) return;
  if (api_request_.stream) {
    if (api_request_.include_usage) push_event(json_text(usage_chunk(header_, generation->usage())));
    return end_events();
  }
  for (const ChoiceResult& r : generation->results())
    if (!r.error.empty())
      return send_error({500, r.error, "internal_error", std::nullopt, std::nullopt});
  send_json(200, full_response(header_, generation->results(), generation->usage(),
                               api_request_.logprobs >= 0 ? &state_->inputs.tokenizer() : nullptr));
}

void HttpSession::start_events() {
  auto header = std::make_shared<http::response<http::empty_body>>(http::status::ok, 11);
  header->set(http::field::server, "hive");
  header->set(http::field::content_type, "text/event-stream");
  header->set(http::field::cache_control, "no-cache");
  header->keep_alive(keep_alive_);
  header->chunked(true);
  auto serializer = std::make_shared<http::response_serializer<http::empty_body>>(*header);
  writing_ = true;
  response_started_ = true;
  stream_.expires_after(state_->options.write_timeout);
  http::async_write_header(stream_, *serializer,
                           guard([this, header, serializer](beast::error_code error, size_t) {
                             writing_ = false;
                             if (error) return close();
                             write_next_event();
                           }));
}

void HttpSession::push_event(const std::string& data) {
  if (closed_) return;
  events_.push_back("data: " + data + "\n\n");
  queued_bytes_ += events_.back().size();
  if (queued_bytes_ > kMaxQueuedEventBytes) return close();
  if (!writing_) write_next_event();
}

void HttpSession::end_events() {
  ending_ = true;  // before the push: [DONE] and the last chunk go out together
  push_event("[DONE]");
}

void HttpSession::write_next_event() {
  if (closed_ || events_.empty()) return;
  // Every event queued by now goes out in one chunk, one send: a step's
  // last token, the finish chunk, usage and [DONE] arrive together, and
  // with [DONE] the chunk that ends the response, so the client's last
  // wake-up is the only one.
  // (A deque's push_back leaves its elements where they are.)
  const bool last = ending_;
  writing_ = true;
  write_buffers_.clear();
  for (const std::string& event : events_) write_buffers_.push_back(asio::buffer(event));
  stream_.expires_after(state_->options.write_timeout);
  auto written = guard([this, count = events_.size(), last](beast::error_code error, size_t) {
    writing_ = false;
    for (size_t i = 0; i < count; ++i) {
      queued_bytes_ -= events_.front().size();
      events_.pop_front();
    }
    if (error) return close();
    if (last) {
      ending_ = false;
      return next();
    }
    write_next_event();
  });
  if (last)
    asio::async_write(stream_,
                      beast::buffers_cat(http::make_chunk(write_buffers_), http::make_chunk_last()),
                      std::move(written));
  else
    asio::async_write(stream_, http::make_chunk(write_buffers_), std::move(written));
}

}  // namespace hive::gateway
