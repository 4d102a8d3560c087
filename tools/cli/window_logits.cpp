#include "tools/cli/window_logits.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/error.hpp"
#include "runtime/model/forward_batch.hpp"

namespace hive::cli {

namespace {

int32_t blocks_for(int64_t tokens, int32_t block_size) {
  return static_cast<int32_t>((tokens + block_size - 1) / block_size);
}

}  // namespace

WindowScorer::WindowScorer(Model& model, int64_t max_tokens, DType kv_dtype)
    : model_(model),
      max_tokens_(max_tokens),
      // Block 0 is the pool's null block; the window uses blocks 1..n.
      cache_(model.backend(), model.config(), blocks_for(max_tokens, kBlockSize) + 1, kBlockSize, 0,
             kv_dtype) {
  check(max_tokens >= 1, "window scorer: max_tokens must be >= 1 (got ", max_tokens, ")");
  block_table_.resize(static_cast<size_t>(blocks_for(max_tokens, kBlockSize)));
  std::iota(block_table_.begin(), block_table_.end(), 1);
}

std::span<const float> WindowScorer::logits(std::span<const int32_t> tokens) {
  const auto count = static_cast<int64_t>(tokens.size());
  check(count >= 1 && count <= max_tokens_, "window scorer: a window holds 1 to ", max_tokens_,
        " tokens (got ", count, ")");
  const int64_t vocab = vocab_size();
  for (const int32_t token : tokens)
    check(token >= 0 && token < vocab, "window scorer: token id ", token,
          " is outside the vocabulary of ", vocab);
  ForwardBatch batch;
  batch.add_run(0, tokens, block_table_, kBlockSize);
  batch.logits_rows.resize(static_cast<size_t>(count));
  std::iota(batch.logits_rows.begin(), batch.logits_rows.end(), 0);
  logits_.resize(static_cast<size_t>(count * vocab));
  model_.forward(batch, cache_, Tensor::view(logits_.data(), DType::f32, {count, vocab}));
  return logits_;
}

int32_t argmax(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

double negative_log_likelihood(std::span<const float> row, int32_t token) {
  const double max = *std::max_element(row.begin(), row.end());
  double sum = 0;
  for (const float value : row) sum += std::exp(static_cast<double>(value) - max);
  return max + std::log(sum) - static_cast<double>(row[static_cast<size_t>(token)]);
}

}  // namespace hive::cli
