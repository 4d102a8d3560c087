#pragma once
// The chat page served at `/`: one HTML file with its script, streaming
// replies through the WebSocket endpoint (/v1/stream).
#include <string>

namespace hive::gateway {

const std::string& chat_page();

}  // namespace hive::gateway
