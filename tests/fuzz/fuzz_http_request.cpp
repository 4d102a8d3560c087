// An HTTP request of arbitrary bytes, read as a gateway connection reads one:
// Beast's parser with the server's header and body limits, then what the
// session does before it needs the engine: the WebSocket upgrade check, the
// path, and for POST /v1/completions and /v1/chat/completions the body.
// (The other routes answer from the engine's state, which needs a running
// engine; the OpenAI bodies are fuzzed on their own in fuzz_openai_request.)
#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include "actors/gateway/api_error.hpp"
#include "actors/gateway/openai_request.hpp"
#include "actors/gateway/server_options.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace beast = boost::beast;
namespace http = beast::http;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const hive::gateway::ServerOptions options;
  http::request_parser<http::string_body> parser;
  parser.body_limit(options.max_body_bytes);
  parser.header_limit(static_cast<std::uint32_t>(options.max_header_bytes));
  beast::error_code error;
  size_t offset = 0;
  while (!error && !parser.is_done() && offset < size) {
    const size_t used = parser.put(boost::asio::buffer(data + offset, size - offset), error);
    if (error == http::error::need_more) break;
    if (used == 0) break;
    offset += used;
  }
  // The end of the bytes is the client closing, as Beast's read loop sees
  // it: end_of_stream before any byte, else put_eof.
  if (!error && !parser.is_done() && parser.got_some()) parser.put_eof(error);
  if (error || !parser.is_done()) return 0;  // the session answers 400 or closes
  const http::request<http::string_body> request = parser.release();
  volatile bool keep_alive = request.keep_alive();
  (void)keep_alive;
  const std::string target(request.target());
  const std::string path = target.substr(0, target.find('?'));
  if (beast::websocket::is_upgrade(request)) return 0;  // fuzz_websocket goes on from here
  if (request.method() != http::verb::post) return 0;
  using hive::gateway::Endpoint;
  try {
    if (path == "/v1/completions")
      hive::gateway::parse_api_request(Endpoint::completions, request.body(), "cmpl-1");
    if (path == "/v1/chat/completions")
      hive::gateway::parse_api_request(Endpoint::chat, request.body(), "chatcmpl-1");
  } catch (const hive::gateway::ApiException&) {
    // A 400 with the field at fault is the expected answer to a bad body.
  }
  return 0;
}
