#pragma once
// A decoder-only transformer (dense or MoE) loaded from a Hugging Face
// directory, run layer by layer on a Backend. One forward pass runs the
// scheduled tokens of any number of sequences together (a ForwardBatch):
//
//   h = embed(all tokens)                                   [num_tokens, hidden]
//   per layer:  q, k, v = projections of rms_norm(h)        (one matmul each)
//               write k, v into the paged cache at the slot mapping
//               paged attention of every sequence's queries over its blocks,
//               one batched op reading the step's plan (built once per pass)
//               h += o_proj(attention);  h += mlp or moe(rms_norm(h))
//   logits = lm_head(rms_norm(h[logits_rows]))
//
// Every op computes each output row on its own, in a fixed order, so a
// sequence's logits do not depend on which other sequences share the batch.
//
// With a tensor-parallel communicator the model is one rank's shard
// (tensor_parallel.hpp): config() is that rank's view (its heads, its share
// of every intermediate size), and forward() all-reduces the attention and
// FFN outputs; every rank of the group must run the same batches.
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/buffer.hpp"
#include "runtime/loader/model_config.hpp"
#include "runtime/loader/weight_store.hpp"
#include "runtime/model/expert_parallel_context.hpp"
#include "runtime/model/forward_batch.hpp"
#include "runtime/model/model_weights.hpp"
#include "runtime/model/paged_kv_cache.hpp"

namespace hive {

// The routing rule of a MoE config: softmax top-k, or DeepSeek-V3's grouped
// sigmoid with its group limits and scaling.
RouterConfig router_config(const ModelConfig& config);

class Model {
 public:
  // Loads config.json and the safetensors weights of `dir` (or a GGUF
  // file); the backend must outlive the model. Throws hive::Error naming the
  // file and the problem.
  Model(const std::filesystem::path& dir, Backend& backend, const LoadOptions& options = {});
  // Rank tensor_parallel->rank() of a tensor-parallel group; the
  // communicator must outlive the model.
  Model(const std::filesystem::path& dir, Backend& backend, Communicator& tensor_parallel,
        const LoadOptions& options = {});

  const ModelConfig& config() const { return config_; }
  const std::filesystem::path& directory() const { return dir_; }
  const WeightStore& weights() const { return store_; }
  const LoadOptions& load_options() const { return options_; }
  Backend& backend() const { return backend_; }
  int tensor_parallel_size() const { return tp_ ? tp_->world_size() : 1; }

  // Runs every token of `batch`, writes their K/V into `cache` and the logits
  // of batch.logits_rows into `logits` ([rows, vocab] f32, host or device
  // memory of this backend). Each run's earlier positions must be in the cache.
  // With `ep`, MoE layers run expert-parallel over ep->comm (and the batch
  // may be empty: then this is forward_idle).
  void forward(const ForwardBatch& batch, PagedKVCache& cache, const Tensor& logits,
               const ExpertParallelContext* ep = nullptr);

  // A step of a rank with no tokens: takes part in every MoE layer's
  // collectives (with zero rows) and computes nothing else.
  void forward_idle(const ExpertParallelContext& ep);

  RouterConfig router_config() const;

  // The ops forward() uses, for choosing a backend.
  static std::span<const Op> required_ops();

 private:
  struct DeviceBatch;
  void attention_block(int64_t layer, const Tensor& x, const DeviceBatch& device,
                       PagedKVCache& cache, const Tensor& out);
  void moe_block(int64_t layer, const Tensor& x, const ExpertParallelContext* ep,
                 const Tensor& out);

  std::filesystem::path dir_;
  LoadOptions options_;
  ModelConfig config_;
  WeightStore store_;
  ModelWeights weights_;
  Backend& backend_;
  Buffer inv_freq_;
  Communicator* tp_ = nullptr;     // tensor parallelism, when set
  std::vector<Buffer> shards_;     // this rank's copied weight slices
  std::vector<MlaAttention> mla_;  // per layer, for MLA models
};

}  // namespace hive
