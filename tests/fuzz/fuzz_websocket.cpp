// WebSocket input of arbitrary bytes. The first byte picks what the rest is:
//   even  one message's text, as the session reads it: parse_client_message,
//         then a start's API fields through parse_api_request
//   odd   the raw bytes a client sends after the upgrade: Beast's server
//         stream (the session's message size limit) reads frames into
//         messages, and each message goes the same way
#include <boost/asio/io_context.hpp>
#include <boost/beast/_experimental/test/stream.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include "actors/gateway/api_error.hpp"
#include "actors/gateway/openai_request.hpp"
#include "actors/gateway/websocket_message.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;

namespace {

void handle_message(const std::string& text) {
  using namespace hive::gateway;
  try {
    const ClientMessage message = parse_client_message(text);
    if (message.type == ClientMessage::Type::start)
      parse_api_request(message.endpoint, message.body, "ws-1");
  } catch (const ClientMessageError&) {
    // An error frame naming the field at fault.
  } catch (const ApiException&) {
    // Likewise, for a start's API fields.
  }
}

void read_frames(const std::string& bytes) {
  boost::asio::io_context io;
  beast::test::stream client(io);
  beast::test::stream server(io);
  client.connect(server);
  websocket::stream<beast::test::stream&> ws(server);
  ws.read_message_max(hive::gateway::kMaxWebSocketMessageBytes);
  http::request<http::string_body> upgrade{http::verb::get, "/v1/stream", 11};
  upgrade.set(http::field::host, "localhost");
  upgrade.set(http::field::upgrade, "websocket");
  upgrade.set(http::field::connection, "upgrade");
  upgrade.set(http::field::sec_websocket_key, "dGhlIHNhbXBsZSBub25jZQ==");
  upgrade.set(http::field::sec_websocket_version, "13");
  beast::error_code error;
  ws.accept(upgrade, error);
  if (error) std::abort();  // the upgrade is fixed and valid
  server.append(bytes);
  client.close();  // after the bytes, the client is gone
  beast::flat_buffer buffer;
  while (true) {
    ws.read(buffer, error);
    if (error) break;  // a protocol error, a close frame, or the end
    handle_message(beast::buffers_to_string(buffer.data()));
    buffer.consume(buffer.size());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest = hive::fuzz::text(data + 1, size - 1);
  if (data[0] % 2 == 0)
    handle_message(rest);
  else
    read_frames(rest);
  return 0;
}
