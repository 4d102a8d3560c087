#include "runtime/generate.hpp"

#include <algorithm>
#include <chrono>

#include "kernels/error.hpp"

namespace hive {

GenerateResult generate(Model& model, std::span<const int32_t> prompt,
                        const GenerateOptions& options,
                        const std::function<void(int32_t)>& on_token) {
  const ModelConfig& config = model.config();
  check(!prompt.empty(), "generate: the prompt is empty");
  check(options.max_tokens >= 1, "max_tokens must be >= 1 (got ", options.max_tokens, ")");
  for (int32_t id : prompt)
    check(id >= 0 && id < config.vocab_size, "prompt token id ", id, " is out of range [0, ",
          config.vocab_size, ")");
  const auto prompt_len = static_cast<int64_t>(prompt.size());
  ContiguousKVCache cache(model.backend(), config, prompt_len + options.max_tokens);
  Sampler sampler(options.sampling);
  std::vector<float> logits(static_cast<size_t>(config.vocab_size));
  const Tensor logits_view = Tensor::view(logits.data(), DType::f32, {1, config.vocab_size});

  GenerateResult result;
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  model.forward(prompt, cache, logits_view);
  result.prefill_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  start = Clock::now();
  for (int64_t i = 0; i < options.max_tokens; ++i) {
    if (i > 0) {
      const int32_t last = result.tokens.back();
      model.forward(std::span<const int32_t>(&last, 1), cache, logits_view);
    }
    const int32_t token = sampler.sample(logits);
    result.tokens.push_back(token);
    if (on_token) on_token(token);
    const auto& eos = config.eos_token_ids;
    if (!options.ignore_eos && std::find(eos.begin(), eos.end(), token) != eos.end()) {
      result.stopped_by_eos = true;
      break;
    }
  }
  result.decode_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace hive
