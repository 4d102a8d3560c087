#pragma once
// What `hive serve` sets on the gateway: address, limits, timeouts. Apart
// from server.hpp so that code reading requests as the server does (the fuzz
// targets) takes the limits without the engine's headers.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace hive::gateway {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;  // 0: any free port (Server::port() tells which)
  std::string api_key;   // non-empty: /v1/ needs "Authorization: Bearer <key>"
  std::string model_name = "hive";  // the id /v1/models lists and requests name
  int64_t max_model_len = 0;        // for /v1/models
  // API requests in flight beyond this are answered 429 with Retry-After.
  int64_t max_queued_requests = 256;
  // Connections (HTTP and WebSocket) open at once; one more is answered 503.
  size_t max_connections = 1024;
  size_t max_body_bytes = size_t{8} << 20;
  size_t max_header_bytes = size_t{16} << 10;
  // From waiting for a request to its last byte: a keep-alive connection
  // that says nothing, or a client that trickles its headers or body
  // (slowloris), is cut off.
  std::chrono::seconds idle_timeout{60};
  std::chrono::seconds write_timeout{60};  // a client that reads nothing
};

}  // namespace hive::gateway
