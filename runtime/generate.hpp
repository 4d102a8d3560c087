#pragma once
// Single-sequence generation: prefill the prompt, then decode one token at a
// time until max_tokens or an end-of-sequence token.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "runtime/model.hpp"
#include "runtime/sampling.hpp"

namespace hive {

struct GenerateOptions {
  int64_t max_tokens = 16;
  SamplingParams sampling;
  bool ignore_eos = false;
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated tokens (the EOS token included, if hit)
  double prefill_seconds = 0;
  double decode_seconds = 0;    // for tokens after the first
  bool stopped_by_eos = false;
};

// on_token (optional) sees each token as it is chosen.
GenerateResult generate(Model& model, std::span<const int32_t> prompt,
                        const GenerateOptions& options,
                        const std::function<void(int32_t)>& on_token = {});

}  // namespace hive
