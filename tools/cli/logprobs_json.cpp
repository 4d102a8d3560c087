#include "tools/cli/logprobs_json.hpp"
#include "base/json_writer.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace hive::cli {

void print_logprobs(const std::string& id, std::span<const int32_t> tokens,
                    std::span<const TokenLogprobs> logprobs) {
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  for (size_t i = 0; i < std::min(tokens.size(), logprobs.size()); ++i) {
    nlohmann::ordered_json top = nlohmann::ordered_json::array();
    for (size_t k = 0; k < logprobs[i].top_token_ids.size(); ++k)
      top.push_back({logprobs[i].top_token_ids[k], logprobs[i].top_logprobs[k]});
    entries.push_back(
        {{"token", tokens[i]}, {"logprob", logprobs[i].logprob}, {"top_logprobs", top}});
  }
  const nlohmann::ordered_json line = {{"id", id}, {"logprobs", entries}};
  std::fprintf(stderr, "%s\n", json_text(line).c_str());
}

}  // namespace hive::cli
