#include "actors/gateway/server.hpp"

#include <boost/asio/post.hpp>
#include <cstdio>
#include <string>
#include <utility>

#include "actors/gateway/http_session.hpp"
#include "actors/gateway/server_state.hpp"

namespace hive::gateway {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

std::string ServerState::new_id(const char* prefix) {
  static const char kHex[] = "0123456789abcdef";
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kHex[ids() % 16];
  return id;
}

const EngineMetrics& ServerState::engine_metrics() {
  const auto now = std::chrono::steady_clock::now();
  if (metrics_time == std::chrono::steady_clock::time_point{} ||
      now - metrics_time > std::chrono::milliseconds(100)) {
    metrics_snapshot = engine.metrics();
    metrics_time = now;
  }
  return metrics_snapshot;
}

void ServerState::add(const std::shared_ptr<Connection>& connection) {
  std::erase_if(connections, [](const std::weak_ptr<Connection>& c) { return c.expired(); });
  connections.push_back(connection);
}

size_t ServerState::open_connections() {
  std::erase_if(connections, [](const std::weak_ptr<Connection>& c) { return c.expired(); });
  return connections.size();
}

void ServerState::release() {
  --in_flight;
  close_connections_if_drained();
}

void ServerState::close_connections_if_drained() {
  if (!draining || in_flight > 0) return;
  for (const std::weak_ptr<Connection>& weak : connections)
    if (const std::shared_ptr<Connection> connection = weak.lock()) connection->close_when_idle();
}

namespace {

// A connection over the limit is told so and closed: a fixed answer,
// written without waiting (it fits any socket buffer).
void refuse(tcp::socket& socket) {
  static const std::string kBusy = [] {
    const std::string body =
        R"({"error": {"message": "the server has too many connections open; retry later", )"
        R"("type": "service_unavailable", "param": null, "code": null}})";
    return str_cat("HTTP/1.1 503 Service Unavailable\r\nServer: hive\r\n",
                   "Content-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\n",
                   "Content-Length: ", body.size(), "\r\n\r\n", body);
  }();
  boost::system::error_code ignored;
  socket.non_blocking(true, ignored);
  socket.write_some(asio::buffer(kBusy), ignored);
  socket.shutdown(tcp::socket::shutdown_both, ignored);
  socket.close(ignored);
}

void accept(const std::shared_ptr<ServerState>& state) {
  state->acceptor.async_accept([state](boost::system::error_code error, tcp::socket socket) {
    if (error) {
      if (error == asio::error::operation_aborted || state->draining) return;
      // Out of file descriptors, say: the others keep being served, and
      // accepting resumes after a pause instead of spinning on the error.
      state->accept_pause.expires_after(std::chrono::milliseconds(100));
      state->accept_pause.async_wait([state](boost::system::error_code) { accept(state); });
      return;
    }
    if (state->open_connections() >= state->options.max_connections) {
      ++state->metrics.rejected_connections;
      refuse(socket);
      return accept(state);
    }
    // Tokens go out as small writes, one per event: Nagle's algorithm would
    // hold each behind the last one's acknowledgement.
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    auto session = std::make_shared<HttpSession>(std::move(socket), state);
    state->add(session);
    session->start();
    accept(state);
  });
}

}  // namespace

Server::Server(Engine& engine, InputProcessor& inputs, ServerOptions options)
    : state_(std::make_shared<ServerState>(engine, inputs, std::move(options))) {}

Server::~Server() {
  state_->outputs->forget_all();
  for (const std::weak_ptr<Connection>& weak : std::exchange(state_->connections, {}))
    if (const std::shared_ptr<Connection> connection = weak.lock()) connection->drop_requests();
}

void Server::listen() {
  ServerState& st = *state_;
  boost::system::error_code error;
  const asio::ip::address address = asio::ip::make_address(st.options.host, error);
  check(!error, "server: host '", st.options.host, "' is not an IP address (", error.message(),
        ")");
  const tcp::endpoint endpoint(address, st.options.port);
  st.acceptor.open(endpoint.protocol(), error);
  if (!error) st.acceptor.set_option(asio::socket_base::reuse_address(true), error);
  if (!error) st.acceptor.bind(endpoint, error);
  if (!error) st.acceptor.listen(asio::socket_base::max_listen_connections, error);
  check(!error, "server: cannot listen on ", st.options.host, ":", st.options.port, ": ",
        error.message());
  accept(state_);
}

uint16_t Server::port() const {
  return state_->acceptor.local_endpoint().port();
}

void Server::run() {
  // Every session's handlers are guarded (boundary.hpp); this is the last
  // resort for a handler that is not: the cause is logged and the other
  // connections are served on.
  while (true) {
    try {
      state_->io.run();
      return;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "hive serve: internal error outside any connection: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "hive serve: internal error outside any connection\n");
    }
  }
}

void Server::stop() {
  asio::post(state_->io, [state = state_] {
    if (state->draining) return;
    state->draining = true;
    boost::system::error_code ignored;
    state->acceptor.close(ignored);
    state->close_connections_if_drained();
  });
}

}  // namespace hive::gateway
