#pragma once
// llama.cpp's tensor names and the Hugging Face names bind_weights asks for:
//
//   token_embd.weight            model.embed_tokens.weight
//   output_norm.weight           model.norm.weight
//   output.weight                lm_head.weight
//   blk.N.attn_norm.weight       model.layers.N.input_layernorm.weight
//   blk.N.attn_q.{weight,bias}   model.layers.N.self_attn.q_proj.{weight,bias}   (k, v, output)
//   blk.N.ffn_gate.weight        model.layers.N.mlp.gate_proj.weight             (up, down)
//   blk.N.ffn_gate_inp.weight    model.layers.N.mlp.gate.weight                  (the router)
//   blk.N.ffn_gate_exps.weight   model.layers.N.mlp.experts.E.gate_proj.weight   (E stacked)
//   ...                          (Mixtral: block_sparse_moe., w1 / w3 / w2)
//   blk.N.attn_q_a.weight        model.layers.N.self_attn.q_a_proj.weight        (DeepSeek: q_b,
//                                kv_a_mqa -> kv_a_proj_with_mqa, the norms, kv_b)
//   blk.N.ffn_gate_shexp.weight  ...mlp.shared_expert.gate_proj (DeepSeek: shared_experts.)
//   blk.N.exp_probs_b.bias       model.layers.N.mlp.gate.e_score_correction_bias (DeepSeek-V3)
#include <cstdint>
#include <optional>
#include <string>

#include "runtime/loader/model_config.hpp"

namespace hive {

struct HfTensorName {
  std::string name;        // a plain tensor's Hugging Face name
  bool experts = false;    // a stack: name holds "{}" where the expert index goes
  bool rope_rows = false;  // q or k: rows in GGML's rope order (Llama permutes them)
};

// The Hugging Face name of GGUF tensor `gguf_name`, or nullopt for a name
// Hive does not use. `arch` picks Mixtral's and DeepSeek's names where they
// differ. DeepSeek's attn_k_b / attn_v_b have none: gguf_weights joins them.
std::optional<HfTensorName> hf_tensor_name(const std::string& gguf_name, Architecture arch);

// Where Hugging Face tensor `hf_name` goes in a GGUF file (the writer's
// direction): the GGUF tensor's name, and for an expert's projection its
// index in the stack; nullopt for a name llama.cpp's layout has no place for.
struct GgufTensorSlot {
  std::string name;
  std::optional<int64_t> expert;
};
std::optional<GgufTensorSlot> gguf_tensor_slot(const std::string& hf_name);

// The GGUF tensor that holds Hugging Face tensor `hf_name`, for messages:
// "blk.0.ffn_up_exps.weight (expert 3)"; `hf_name` itself when none does.
std::string gguf_tensor_name(const std::string& hf_name);

}  // namespace hive
