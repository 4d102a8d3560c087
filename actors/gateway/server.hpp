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
#include <cstdint>
#include <memory>

#include "actors/engine.hpp"
#include "actors/gateway/server_options.hpp"
#include "runtime/engine/input_processor.hpp"

namespace hive::gateway {

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
