#pragma once
// An error as the OpenAI API answers it: an HTTP status and
//
//   {"error": {"message": "...", "type": "invalid_request_error",
//              "param": "max_tokens", "code": null}}
#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace hive::gateway {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::optional<std::string> param;  // the request field at fault
  std::optional<std::string> code;   // e.g. model_not_found, invalid_api_key

  // A parser's message may quote much of the input; the start says enough.
  static constexpr size_t kMaxMessageBytes = 1000;

  nlohmann::json body() const {
    return {{"error",
             {{"message", message.size() > kMaxMessageBytes
                              ? message.substr(0, kMaxMessageBytes) + "..."
                              : message},
              {"type", type},
              {"param", param ? nlohmann::json(*param) : nlohmann::json(nullptr)},
              {"code", code ? nlohmann::json(*code) : nlohmann::json(nullptr)}}}};
  }
};

// Thrown while a request is read; the session answers with it.
struct ApiException {
  ApiError error;
};

[[noreturn]] inline void bad_request(std::string message,
                                     std::optional<std::string> param = std::nullopt) {
  throw ApiException{ApiError{400, std::move(message), "invalid_request_error", std::move(param),
                              std::nullopt}};
}

}  // namespace hive::gateway
