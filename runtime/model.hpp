#pragma once
// A decoder-only transformer (dense or MoE) loaded from a Hugging Face
// directory, run layer by layer on a Backend. One forward pass appends a run
// of tokens to a sequence's KV cache and returns logits for its last rows:
//
//   h = embed(tokens)
//   per layer:  h += o_proj(attention(rope(q), rope(k), v))   of rms_norm(h)
//               h += mlp(rms_norm(h))  or  moe(rms_norm(h))
//   logits = lm_head(rms_norm(h))
#include <filesystem>
#include <memory>
#include <span>

#include "kernels/backend.hpp"
#include "kernels/buffer.hpp"
#include "runtime/kv_cache.hpp"
#include "runtime/model_config.hpp"
#include "runtime/model_weights.hpp"
#include "runtime/weight_store.hpp"

namespace hive {

class Model {
 public:
  // Loads config.json and the safetensors weights of `dir`; the backend must
  // outlive the model. Throws hive::Error naming the file and the problem.
  Model(const std::filesystem::path& dir, Backend& backend);

  const ModelConfig& config() const { return config_; }
  const WeightStore& weights() const { return store_; }
  Backend& backend() const { return backend_; }

  // Runs `tokens` after the cache's current contents, appends their K/V and
  // writes the logits of the last logits.shape[0] tokens into `logits`
  // ([rows, vocab] f32, host or device memory of this backend).
  void forward(std::span<const int32_t> tokens, ContiguousKVCache& cache, const Tensor& logits);

  // The ops forward() uses, for choosing a backend.
  static std::span<const Op> required_ops();

 private:
  void attention_block(int64_t layer, const Tensor& x, const Tensor& positions,
                       ContiguousKVCache& cache, const Tensor& out);

  ModelConfig config_;
  WeightStore store_;
  ModelWeights weights_;
  Backend& backend_;
  Buffer inv_freq_;
};

}  // namespace hive
