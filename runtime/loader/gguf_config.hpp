#pragma once
// A ModelConfig from a GGUF file's metadata, for the architectures whose
// tensors map one to one onto a Hugging Face checkpoint's (llama.cpp's
// names for them):
//
//   GGUF general.architecture   Hugging Face class
//   llama                       LlamaForCausalLM (Mistral converts to it too),
//                               MixtralForCausalLM when it has experts
//   qwen2, qwen3                Qwen2ForCausalLM, Qwen3ForCausalLM
//   qwen2moe, qwen3moe          Qwen2MoeForCausalLM, Qwen3MoeForCausalLM
//   deepseek2                   DeepseekV2ForCausalLM (softmax routing),
//                               DeepseekV3ForCausalLM (expert_gating_func sigmoid)
//
// The metadata is written out as the config.json it stands for and parsed by
// parse_model_config, so both formats share one set of checks. What GGUF
// does not hold as a key is read from the tensors: the vocabulary from
// token_embd, tied embeddings from a missing output.weight, biases from
// attn_q.bias, dense layers of an MoE model from a missing ffn_gate_inp,
// Llama 3 rope scaling from rope_freqs.weight.
#include <filesystem>

#include <nlohmann/json_fwd.hpp>

#include "runtime/loader/gguf_file.hpp"
#include "runtime/loader/model_config.hpp"

namespace hive {

// True for a path that names a regular file ending in ".gguf": such a path
// loads as one GGUF file, anything else as a Hugging Face directory.
bool is_gguf_model(const std::filesystem::path& path);

// The config.json equivalent of the file's metadata; throws hive::Error
// naming the file and the key for a missing key or an unsupported
// architecture.
nlohmann::json gguf_config_json(const GgufFile& file);

ModelConfig gguf_model_config(const GgufFile& file);

}  // namespace hive
