#pragma once
// The one way Hive writes JSON for a client, a log or an output line: what
// it quotes may be bytes that are not UTF-8 (a token that ends inside a
// character, a client's bytes named in an error), and nlohmann's default
// dump() throws on them. Here each invalid byte becomes U+FFFD, as Python's
// bytes.decode("utf-8", "replace") writes it; serialising never throws.
#include <string>

#include <nlohmann/json.hpp>

namespace hive {

template <class Json = nlohmann::json>
std::string json_text(const Json& value, int indent = -1) {
  return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace hive
