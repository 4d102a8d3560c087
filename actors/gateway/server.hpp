#pragma once
// The gateway's HTTP server, on Boost.Beast over Asio. It talks to the
// engine through hive::Engine's public API only (submit, stop_sample,
// cancel, metrics), so the engine inside can change without touching it.
//
//   POST /v1/completions, /v1/chat/completions   OpenAI's API, SSE with "stream"
//   GET  /v1/models, /health, /version, /metrics (Prometheus text)
//
// One I/O thread runs every connection, the input and output processors and
// the metrics: the work per token is a few microseconds, and one thread
// needs no locks. The engine's callbacks only post events to it.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "actors/engine.hpp"
#include "runtime/engine/input_processor.hpp"

namespace hive::gateway {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;  // 0: any free port (Server::port() tells which)
  std::string api_key;   // non-empty: /v1/ needs "Authorization: Bearer <key>"
  std::string model_name = "hive";  // the id /v1/models lists and requests name
  int64_t max_model_len = 0;        // for /v1/models
  // API requests in flight beyond this are answered 429 with Retry-After.
  int64_t max_queued_requests = 256;
  size_t max_body_bytes = size_t{8} << 20;
  size_t max_header_bytes = size_t{16} << 10;
  std::chrono::seconds idle_timeout{60};   // a keep-alive connection that says nothing
  std::chrono::seconds write_timeout{60};  // a client that reads nothing
};

struct ServerState;

class Server {
 public:
  // The engine and the input processor must outlive the server.
  Server(Engine& engine, InputProcessor& inputs, ServerOptions options);
  ~Server();

  // Binds and listens; throws hive::Error naming the address when it cannot.
  void listen();
  uint16_t port() const;
  // Serves on the calling thread until stop() has drained the requests in
  // flight and every connection has closed.
  void run();
  // From any thread: new requests get 503, requests in flight finish, then
  // run() returns.
  void stop();

 private:
  std::shared_ptr<ServerState> state_;
};

}  // namespace hive::gateway
