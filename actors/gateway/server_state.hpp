#pragma once
// What every connection of the gateway shares; touched on the I/O thread only.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <random>
#include <string>

#include "actors/engine.hpp"
#include "actors/gateway/metrics.hpp"
#include "actors/gateway/server.hpp"
#include "runtime/engine/input_processor.hpp"

namespace hive::gateway {

struct ServerState {
  ServerState(Engine& e, InputProcessor& i, ServerOptions o)
      : engine(e), inputs(i), options(std::move(o)), acceptor(io) {}

  Engine& engine;
  InputProcessor& inputs;
  ServerOptions options;
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acceptor;
  Metrics metrics;
  int64_t in_flight = 0;  // API requests submitted and not yet answered
  bool draining = false;
  std::mt19937_64 ids{std::random_device{}()};

  // "cmpl-" and 24 hex digits.
  std::string new_id(const char* prefix);
  // A request ended: when draining, the last one stops the server.
  void release();
};

}  // namespace hive::gateway
