#pragma once
// The logits at every position of a window of tokens, run from an empty
// cache: the scoring pass that `hive eval-ppl` and `hive agree` share.
//
//   tokens   t0  t1  t2 ... t(n-1)
//   row i    the model's logits for the token after t0..ti
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/model/model.hpp"
#include "runtime/model/paged_kv_cache.hpp"

namespace hive::cli {

class WindowScorer {
 public:
  // Windows of up to max_tokens tokens, the KV cache stored as kv_dtype;
  // the model must outlive the scorer.
  WindowScorer(Model& model, int64_t max_tokens, DType kv_dtype = kDefaultKVCacheDType);

  // [tokens.size(), vocab] f32, row-major; valid until the next call.
  std::span<const float> logits(std::span<const int32_t> tokens);

  int64_t max_tokens() const { return max_tokens_; }
  int64_t vocab_size() const { return model_.config().vocab_size; }

 private:
  static constexpr int32_t kBlockSize = 16;

  Model& model_;
  int64_t max_tokens_;
  PagedKVCache cache_;
  std::vector<int32_t> block_table_;
  std::vector<float> logits_;
};

// Index of the largest value (the first one on ties, as torch.argmax).
int32_t argmax(std::span<const float> row);

// -log softmax(row)[token], computed in double.
double negative_log_likelihood(std::span<const float> row, int32_t token);

}  // namespace hive::cli
