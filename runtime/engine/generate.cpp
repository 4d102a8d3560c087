#include "runtime/engine/generate.hpp"

#include <algorithm>
#include <chrono>

#include "base/error.hpp"
#include "runtime/engine/llm_engine.hpp"

namespace hive {

GenerateResult generate(Model& model, std::span<const int32_t> prompt,
                        const GenerateOptions& options,
                        const std::function<bool(int32_t)>& on_token) {
  check(!prompt.empty(), "generate: the prompt is empty");
  check(options.max_tokens >= 1, "max_tokens must be >= 1 (got ", options.max_tokens, ")");
  check(options.block_size >= 1, "block_size must be >= 1 (got ", options.block_size, ")");
  // Checked before the KV pool is sized from it (the engine checks it again).
  const int64_t context = model.config().max_position_embeddings;
  check(context == 0 || options.max_tokens <= context - static_cast<int64_t>(prompt.size()),
        "prompt (", prompt.size(), " tokens) + max_tokens (", options.max_tokens,
        ") exceed the model's context length of ", context, " tokens (max_position_embeddings)");
  const auto total = static_cast<int64_t>(prompt.size()) + options.max_tokens;
  EngineConfig config;
  config.block_size = options.block_size;
  config.kv_cache_dtype = options.kv_cache_dtype;
  const int64_t blocks = (total + options.block_size - 1) / options.block_size + 1;  // + null
  config.kv_budget.bytes =
      blocks * kv_bytes_per_block(model.config(), options.block_size, config.kv_cache_dtype);
  config.scheduler.max_num_batched_tokens = std::max<int64_t>(total, 512);
  config.speculative = options.speculative;
  LLMEngine engine(model, config);

  Request request;
  const std::string id = "generate";
  request.id = id;
  request.prompt_token_ids.assign(prompt.begin(), prompt.end());
  request.sampling = options.sampling;
  request.stop.max_tokens = options.max_tokens;
  request.stop.ignore_eos = options.ignore_eos;
  engine.add_request(std::move(request));

  GenerateResult result;
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  while (engine.has_unfinished()) {
    const std::vector<SequenceOutput> finished = engine.step();
    for (const SequenceOutput& out : finished) check(out.error.empty(), out.error);
    // A step may add several tokens (speculation): the text may stop at any.
    for (const NewToken& token : engine.last_tokens()) {
      if (result.tokens.empty()) {
        result.prefill_seconds = std::chrono::duration<double>(Clock::now() - start).count();
        start = Clock::now();
      }
      result.tokens.push_back(token.token);
      if (token.logprobs) result.logprobs.push_back(*token.logprobs);
      if (on_token && !on_token(token.token)) {
        // The text ends here whatever the engine decided for this token.
        if (finished.empty()) engine.abort_request(id, FinishReason::stop_string);
        result.finish_reason = FinishReason::stop_string;
        break;
      }
    }
    if (!finished.empty() && result.finish_reason == FinishReason::none)
      result.finish_reason = finished[0].finish_reason;
  }
  result.decode_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.spec_decode = engine.stats().scheduler.spec_decode;
  return result;
}

}  // namespace hive
