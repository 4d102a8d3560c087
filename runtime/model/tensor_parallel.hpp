#pragma once
// Tensor parallelism (Megatron-style column/row splits) of one model over the
// ranks of a Communicator. Rank r of T holds:
//
//   attention  q/k/v_proj rows of heads [r*H/T, (r+1)*H/T)  (column parallel)
//              o_proj columns of those heads                 (row parallel)
//   every FFN  gate/up rows [r*I/T, (r+1)*I/T), down columns (dense MLPs,
//              each routed expert and the shared expert)
//   the rest   replicated: embedding, norms, router, lm_head
//
// Each layer then all-reduces twice (after o_proj and after the FFN/MoE).
// The activations between layers are identical on every rank, so the router
// picks the same experts everywhere and every rank computes the same logits.
// Biases of row-parallel outputs are added by rank 0 only. Every rank samples
// the same tokens from those logits only with the same seed: the actor
// runtime plans once for the group; ranks that each run their own LLMEngine
// must give every sampled request a seed (a missing one is drawn at random,
// per engine, and the ranks would diverge).
//
// The KV cache of a rank holds only its K/V heads: local_config() is the
// model config as one rank sees it (heads and intermediate sizes divided),
// from which the cache and the KV budget are sized.
#include <vector>

#include "kernels/buffer.hpp"
#include "runtime/loader/model_config.hpp"
#include "runtime/model/model_weights.hpp"

namespace hive {

// The config of one of `size` ranks. Throws naming the dimension that `size`
// does not divide (attention heads, KV heads, an intermediate size).
ModelConfig tensor_parallel_config(const ModelConfig& full, int size);

// Replaces `weights` (bound to the full checkpoint) by rank `rank`'s shard of
// `size`. Row slices stay views of the checkpoint; column slices are copied
// into buffers appended to `owned`, which must outlive the weights.
void shard_weights(const ModelConfig& full, int rank, int size, ModelWeights& weights,
                   Backend& backend, std::vector<Buffer>& owned);

}  // namespace hive
