#pragma once
// How hive generate and hive run print logprobs: one JSON line per sample on
// stderr, so stdout keeps the output alone:
//
//   {"id": "prompt 1", "logprobs": [{"token": 42, "logprob": -0.12,
//     "top_logprobs": [[42, -0.12], [7, -2.5]]}, ...]}
//
// one entry per generated token, top_logprobs most likely first. The numbers
// are the model's raw logprobs (runtime/core/token_logprobs.hpp).
#include <cstdint>
#include <span>
#include <string>

#include "runtime/core/token_logprobs.hpp"

namespace hive::cli {

// Prints the line; tokens and logprobs pair up by position.
void print_logprobs(const std::string& id, std::span<const int32_t> tokens,
                    std::span<const TokenLogprobs> logprobs);

}  // namespace hive::cli
