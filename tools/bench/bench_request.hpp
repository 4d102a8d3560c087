#pragma once
// A benchmark's synthetic request: `prompt_len` token ids spread over the
// vocabulary by its index, `max_tokens` generated with EOS ignored, so every
// run does the same work.
#include <cstdint>
#include <string>

#include "runtime/core/request.hpp"

namespace hive::bench {

inline Request synthetic_request(int64_t index, int64_t prompt_len, int64_t max_tokens,
                                 int64_t vocab) {
  Request r;
  r.id = std::to_string(index);
  for (int64_t t = 0; t < prompt_len; ++t)
    r.prompt_token_ids.push_back(static_cast<int32_t>((7919 * index + 104729 * t + 13) % vocab));
  r.stop.max_tokens = max_tokens;
  r.stop.ignore_eos = true;
  return r;
}

}  // namespace hive::bench
