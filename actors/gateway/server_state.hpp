#pragma once
// What every connection of the gateway shares; touched on the I/O thread only.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "actors/engine.hpp"
#include "actors/gateway/engine_outputs.hpp"
#include "actors/gateway/metrics.hpp"
#include "actors/gateway/server.hpp"
#include "runtime/engine/input_processor.hpp"

namespace hive::gateway {

// A connection, as the server sees it when it shuts down.
class Connection {
 public:
  virtual ~Connection() = default;
  // The server is done: close once what is being written is out.
  virtual void close_when_idle() = 0;
  // The server is gone: drop the requests still held. A session and its
  // Generations hold each other until a request's last event, which a
  // stopped io_context never runs.
  virtual void drop_requests() = 0;
};

struct ServerState {
  ServerState(Engine& e, InputProcessor& i, ServerOptions o)
      : engine(e),
        inputs(i),
        options(std::move(o)),
        acceptor(io),
        accept_pause(io),
        outputs(EngineOutputs::make(e, i.tokenizer(), io.get_executor())) {}

  Engine& engine;
  InputProcessor& inputs;
  ServerOptions options;
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acceptor;
  boost::asio::steady_timer accept_pause;  // after a failed accept
  Metrics metrics;
  // Every request's engine outputs, one batch per step, and their text.
  std::shared_ptr<EngineOutputs> outputs;
  int64_t in_flight = 0;  // API requests submitted and not yet answered
  // Set by Server::stop(): new requests get 503 on the connections still
  // open; when the last request in flight is answered, every connection
  // closes and run() returns.
  bool draining = false;
  std::vector<std::weak_ptr<Connection>> connections;
  std::mt19937_64 ids{std::random_device{}()};
  EngineMetrics metrics_snapshot;
  std::chrono::steady_clock::time_point metrics_time;

  // Engine::metrics(), at most 100 ms old: it is a round trip to the
  // scheduler actor, and /metrics, /health and the WebSocket's stats may be
  // asked for far more often than a step changes them.
  const EngineMetrics& engine_metrics();

  // "cmpl-" and 24 hex digits.
  std::string new_id(const char* prefix);
  void add(const std::shared_ptr<Connection>& connection);
  // Connections still open (HTTP and WebSocket).
  size_t open_connections();
  // A request ended: when draining, the last one closes the connections.
  void release();
  // Draining and nothing in flight: close every connection.
  void close_connections_if_drained();
};

}  // namespace hive::gateway
