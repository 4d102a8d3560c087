// The whole server from raw bytes: `hive serve`'s gateway, on the bundled
// model, listening on a loopback port in this process, and a client that
// sends the fuzzer's bytes. Everything a connection reaches is on the path:
// Beast's parser, the router, request reading, input processing (tokenizer,
// chat template), the engine, output processing and the writers. The first
// byte picks what the rest is:
//   even  bytes sent as they are on a new connection; the client reads the
//         answers of the requests those bytes complete (parsed on its side
//         with the server's limits), then closes
//   odd   a WebSocket on /v1/stream: the rest split at '\n' into messages
//         (text frames, or binary where a message starts with 0x01), then a
//         stats message whose answer ends the input
// A crash, a sanitizer report, a hang (libFuzzer's -timeout) or a server
// that stops answering /health fails the target. Generations are short:
// sequences are capped at 24 tokens.
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "actors/engine.hpp"
#include "actors/gateway/server.hpp"
#include "runtime/engine/input_processor.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kReadTimeout = std::chrono::seconds(8);

struct Served {
  hive::HiveConfig config;
  std::unique_ptr<hive::Engine> engine;
  std::unique_ptr<hive::InputProcessor> inputs;
  std::unique_ptr<hive::gateway::Server> server;
  std::thread thread;
  hive::gateway::ServerOptions options;

  Served() {
    config.model = std::string(HIVE_SOURCE_DIR) + "/models/hive-moe-target";
    config.device = hive::DeviceChoice::cpu;
    config.engine.kv_budget.bytes = int64_t{8} << 20;
    config.engine.scheduler.max_num_seqs = 8;
    config.engine.scheduler.max_num_batched_tokens = 128;
    engine = std::make_unique<hive::Engine>(config);
    hive::InputLimits limits;
    limits.max_sequence_tokens = 24;
    limits.default_max_tokens = 4;
    limits.default_max_tokens_text = 4;
    limits.default_max_tokens_chat = 4;
    limits.max_n = 4;
    inputs = std::make_unique<hive::InputProcessor>(config.model, engine->model_config(), limits);
    options.host = "127.0.0.1";
    options.port = 0;
    options.model_name = "hive-moe-target";
    options.max_body_bytes = size_t{1} << 20;
    server = std::make_unique<hive::gateway::Server>(*engine, *inputs, options);
    server->listen();
    options.port = server->port();
    thread = std::thread([this] { server->run(); });
  }
};

Served& served() {
  // Never destroyed: the server runs until the process ends.
  static Served* instance = new Served();
  return *instance;
}

// How many whole requests the bytes hold, read as the server reads them.
int complete_requests(const std::string& bytes, const hive::gateway::ServerOptions& options) {
  int count = 0;
  size_t offset = 0;
  while (offset < bytes.size()) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(options.max_body_bytes);
    parser.header_limit(static_cast<std::uint32_t>(options.max_header_bytes));
    beast::error_code error;
    while (!parser.is_done() && offset < bytes.size()) {
      const size_t used = parser.put(asio::buffer(bytes.data() + offset, bytes.size() - offset), error);
      if (error == http::error::need_more) error = {};
      if (error) return count + 1;  // answered with an error (or dropped), then closed
      if (used == 0) break;
      offset += used;
    }
    if (!parser.is_done()) return count;
    if (websocket::is_upgrade(parser.get())) return count + 1;
    ++count;
    if (!parser.get().keep_alive()) return count;
  }
  return count;
}

void send_http(const std::string& bytes) {
  Served& s = served();
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), s.options.port));
  asio::write(stream.socket(), asio::buffer(bytes));
  const int answers = complete_requests(bytes, s.options);
  beast::flat_buffer buffer;
  for (int i = 0; i < answers;) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    beast::error_code error;
    stream.expires_after(kReadTimeout);
    http::read(stream, buffer, parser, error);
    if (error == beast::error::timeout) std::abort();  // the server stopped answering
    if (error) break;  // the server closed: after an error, or a final answer
    if (parser.get().result_int() >= 200) ++i;  // a 100 Continue comes before its answer
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
}

void send_websocket(const std::string& bytes) {
  Served& s = served();
  asio::io_context io;
  websocket::stream<beast::tcp_stream> ws(io);
  beast::get_lowest_layer(ws).connect(
      tcp::endpoint(asio::ip::make_address("127.0.0.1"), s.options.port));
  beast::get_lowest_layer(ws).expires_after(kReadTimeout);
  ws.handshake("127.0.0.1", "/v1/stream");
  size_t start = 0;
  while (start <= bytes.size()) {
    const size_t end = std::min(bytes.find('\n', start), bytes.size());
    std::string message = bytes.substr(start, end - start);
    const bool binary = !message.empty() && message[0] == '\x01';
    ws.binary(binary);
    if (binary) message.erase(0, 1);
    beast::error_code error;
    ws.write(asio::buffer(message), error);
    if (error) return;  // the server closed the connection (e.g. bytes that are not UTF-8)
    start = end + 1;
  }
  ws.text(true);
  beast::error_code error;
  ws.write(asio::buffer(std::string(R"({"type": "stats"})")), error);
  beast::flat_buffer buffer;
  while (!error) {
    beast::get_lowest_layer(ws).expires_after(kReadTimeout);
    ws.read(buffer, error);
    if (error == beast::error::timeout) std::abort();
    const std::string reply = beast::buffers_to_string(buffer.data());
    buffer.consume(buffer.size());
    if (reply.find(R"("type":"stats")") != std::string::npos) break;
  }
  ws.close(websocket::close_code::normal, error);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest = hive::fuzz::text(data + 1, size - 1);
  try {
    if (data[0] % 2 == 0)
      send_http(rest);
    else
      send_websocket(rest);
  } catch (const boost::system::system_error&) {
    // The client's side of a connection the server closed: not a finding.
  }
  return 0;
}
