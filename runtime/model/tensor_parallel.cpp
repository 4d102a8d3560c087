#include "runtime/model/tensor_parallel.hpp"

#include <cstring>

#include "base/error.hpp"

namespace hive {

namespace {

int64_t split(int64_t n, int size, const char* what) {
  check(n % size == 0, "tensor parallelism: ", what, " (", n, ") is not divisible by ",
        "tensor_parallel_size ", size);
  return n / size;
}

// Columns [begin, begin + count) of a 2-d host tensor, copied contiguously;
// a block dtype's (GGUF's quantized weights) only at whole blocks.
Tensor copy_columns(const Tensor& w, int64_t begin, int64_t count, Backend& backend,
                    std::vector<Buffer>& owned) {
  check(w.ndim == 2 && w.is_contiguous() && w.device == Device::cpu,
        "tensor parallelism: cannot split the columns of ", w.shape_text());
  check(!w.block_scales, "tensor parallelism: cannot split the columns of ", w.shape_text(),
        " with its FP8 block scales (not implemented); use expert parallelism");
  const int64_t block = dtype_block_size(w.dtype);
  check(begin % block == 0 && count % block == 0, "tensor parallelism: a shard of ", count,
        " columns at ", begin, " of ", w.shape_text(), " splits its ", block,
        "-element blocks; use a tensor_parallel_size that keeps whole blocks, or expert "
        "parallelism");
  const int64_t rows = w.shape[0];
  Buffer& out = owned.emplace_back(backend, w.dtype, std::initializer_list<int64_t>{rows, count});
  const auto row_bytes = static_cast<size_t>(dtype_bytes(w.dtype, w.shape[1]));
  const auto offset = static_cast<size_t>(dtype_bytes(w.dtype, begin));
  const auto bytes = static_cast<size_t>(dtype_bytes(w.dtype, count));
  const auto* src = static_cast<const char*>(w.data);
  auto* dst = static_cast<char*>(out.data());
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + static_cast<size_t>(r) * bytes,
                src + static_cast<size_t>(r) * row_bytes + offset, bytes);
  return out.tensor();
}

void shard_ffn(FfnWeights& w, int rank, int size, Backend& backend, std::vector<Buffer>& owned) {
  const int64_t local = split(w.intermediate_size(), size, "an FFN intermediate size");
  w.gate = w.gate.rows(rank * local, local);
  w.up = w.up.rows(rank * local, local);
  w.down = copy_columns(w.down, rank * local, local, backend, owned);
}

}  // namespace

ModelConfig tensor_parallel_config(const ModelConfig& full, int size) {
  check(size >= 1, "tensor_parallel_size must be >= 1 (got ", size, ")");
  check(size == 1 || !full.mla, "tensor parallelism is not implemented for MLA models (",
        architecture_name(full.architecture), "); use expert parallelism");
  ModelConfig c = full;
  c.num_heads = split(full.num_heads, size, "num_attention_heads");
  c.num_kv_heads = split(full.num_kv_heads, size, "num_key_value_heads");
  if (full.intermediate_size > 0)
    c.intermediate_size = split(full.intermediate_size, size, "intermediate_size");
  if (full.moe_intermediate_size > 0)
    c.moe_intermediate_size = split(full.moe_intermediate_size, size, "moe_intermediate_size");
  if (full.shared_expert_intermediate_size > 0)
    c.shared_expert_intermediate_size =
        split(full.shared_expert_intermediate_size, size, "shared_expert_intermediate_size");
  return c;
}

void shard_weights(const ModelConfig& full, int rank, int size, ModelWeights& weights,
                   Backend& backend, std::vector<Buffer>& owned) {
  const ModelConfig local = tensor_parallel_config(full, size);
  check(rank >= 0 && rank < size, "tensor parallelism: rank ", rank, " of ", size);
  const int64_t q = local.q_size(), kv = local.kv_size();
  for (LayerWeights& layer : weights.layers) {
    AttentionWeights& a = layer.attention;
    a.q_proj = a.q_proj.rows(rank * q, q);
    a.k_proj = a.k_proj.rows(rank * kv, kv);
    a.v_proj = a.v_proj.rows(rank * kv, kv);
    if (a.q_bias) a.q_bias = a.q_bias->rows(rank * q, q);
    if (a.k_bias) a.k_bias = a.k_bias->rows(rank * kv, kv);
    if (a.v_bias) a.v_bias = a.v_bias->rows(rank * kv, kv);
    a.o_proj = copy_columns(a.o_proj, rank * q, q, backend, owned);
    if (rank != 0) a.o_bias.reset();  // added once, by rank 0
    if (!layer.is_moe) {
      shard_ffn(layer.mlp, rank, size, backend, owned);
      continue;
    }
    for (FfnWeights& expert : layer.moe.experts) shard_ffn(expert, rank, size, backend, owned);
    if (layer.moe.has_shared_expert) shard_ffn(layer.moe.shared_expert, rank, size, backend, owned);
  }
}

}  // namespace hive
