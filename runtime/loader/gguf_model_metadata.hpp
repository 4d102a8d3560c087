#pragma once
// The metadata a GGUF file needs beside its tensors, from a Hugging Face
// directory, under the keys llama.cpp's converter writes and gguf_config /
// gguf_tokenizer read back (the reverse of those two):
//
//   general.architecture   llama (Llama, Mistral, Mixtral), qwen2, qwen3,
//                          qwen2moe, qwen3moe, deepseek2 (DeepSeek-V2/V3)
//   <arch>.*               context_length, embedding_length, block_count,
//                          feed_forward_length, attention.head_count(_kv),
//                          key_length, value_length, rope.dimension_count,
//                          layer_norm_rms_epsilon, vocab_size, rope.freq_base,
//                          rope.scaling.* (linear, yarn), expert_* for MoE;
//                          deepseek2: MLA's attention.*lora_rank and *_mla
//                          lengths, expert_gating_func, groups, shared count
//   tokenizer.ggml.*       gpt2 (byte-level BPE): tokens, token_type, merges,
//                          pre "gpt-2", bos/eos/eot/padding ids, add_bos_token
//   tokenizer.chat_template
//
// Llama 3 rope scaling is a tensor, rope_freqs.weight (llama3_rope_factors).
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/loader/gguf_writer.hpp"
#include "runtime/loader/model_config.hpp"

namespace hive {

// The GGUF architecture of `config`; throws naming the architecture and the
// supported ones for any other.
std::string gguf_architecture(const ModelConfig& config);

// general.architecture, general.name and the architecture's keys.
void add_model_metadata(GgufWriter& writer, const ModelConfig& config, const std::string& name);

// The per-frequency divisors llama.cpp's converter writes for Llama 3 rope
// scaling (head_dim / 2 values).
std::vector<float> llama3_rope_factors(const RopeConfig& rope, int64_t head_dim);

// tokenizer.ggml.* and the chat template from `dir`'s tokenizer.json and
// tokenizer_config.json. Returns false, writing nothing, when the directory
// has no tokenizer.json; throws naming the file for a tokenizer GGUF's
// "gpt2" model cannot express (not byte-level BPE, another pre-tokenizer).
bool add_tokenizer_metadata(GgufWriter& writer, const std::filesystem::path& dir,
                            const ModelConfig& config);

}  // namespace hive
