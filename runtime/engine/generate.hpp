#pragma once
// Single-request generation on the offline engine: the prompt, then one
// token per step until max_tokens or an end-of-sequence token. The KV pool is
// sized for exactly this request.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "runtime/core/scheduler.hpp"
#include "runtime/core/speculative_config.hpp"
#include "runtime/model/kv_budget.hpp"
#include "runtime/model/model.hpp"
#include "runtime/model/sampling.hpp"

namespace hive {

struct GenerateOptions {
  int64_t max_tokens = 16;
  SamplingParams sampling;
  bool ignore_eos = false;
  int32_t block_size = 16;
  DType kv_cache_dtype = kDefaultKVCacheDType;
  SpeculativeConfig speculative;  // its draft model's pool holds as many blocks as the target's
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated tokens (the EOS token included, if hit)
  double prefill_seconds = 0;   // until the first token
  double decode_seconds = 0;    // for tokens after the first
  FinishReason finish_reason = FinishReason::none;
  std::vector<TokenLogprobs> logprobs;  // per token, when options.sampling.logprobs is set
  SpecDecodeStats spec_decode;          // with speculation
};

// on_token (optional) sees each token as it is chosen and returns whether to
// go on: false ends the generation there with FinishReason::stop_string (the
// output processor above found a stop string in the text).
GenerateResult generate(Model& model, std::span<const int32_t> prompt,
                        const GenerateOptions& options,
                        const std::function<bool(int32_t)>& on_token = {});

}  // namespace hive
