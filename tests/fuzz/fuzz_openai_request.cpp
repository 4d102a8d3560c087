// The JSON body of POST /v1/completions or /v1/chat/completions (the first
// byte picks which), of arbitrary bytes, read as the gateway reads it.
#include "actors/gateway/api_error.hpp"
#include "actors/gateway/openai_request.hpp"
#include "base/error.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  using hive::gateway::Endpoint;
  const Endpoint endpoint = data[0] & 1 ? Endpoint::chat : Endpoint::completions;
  try {
    const auto request =
        hive::gateway::parse_api_request(endpoint, hive::fuzz::text(data + 1, size - 1), "cmpl-1");
    volatile size_t prompts = request.prompts.size();
    (void)prompts;
  } catch (const hive::gateway::ApiException&) {
    // A 400 with the field at fault is the expected answer to a bad body.
  }
  return 0;
}
