#pragma once
// Which ggml type each tensor of a `hive quantize` file gets: llama.cpp's
// rules (src/llama-quant.cpp, llama_tensor_get_type, no importance matrix)
// for the three file types Hive writes, so a file is the mix llama-quantize
// would make from the same weights:
//
//   not quantized      1-D tensors, norms, routers (ffn_gate_inp), rope_freqs: F32
//   q8_0 (file type 7)   every other weight Q8_0
//   q4_0 (file type 2)   Q4_0; output.weight (token_embd.weight when tied) Q6_K
//   q4_k_m (type 15)     Q4_K; output.weight (or tied token_embd) Q6_K;
//                        attn_v and ffn_down Q6_K in the layers where
//                        use_more_bits holds (the first and last eighth,
//                        every third between), else Q4_K
//   8 experts (Mixtral-like), any type: attn_v and attn_k Q8_0; q4_k_m's
//                        attn_output Q5_K
//
// A row that is not a whole number of the chosen type's blocks falls back
// as llama.cpp's does: Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0; and when
// no 32-block type fits either, F16, as llama.cpp (which refuses a Q8_0 or
// Q4_0 file instead). Each fallback is reported.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/quant/ggml_type.hpp"

namespace hive {

enum class QuantMix { q8_0, q4_0, q4_k_m };

// "q8_0", "q4_0", "q4_k_m" (any case); nullopt otherwise.
std::optional<QuantMix> parse_quant_mix(std::string_view name);
std::string_view quant_mix_name(QuantMix mix);  // "Q4_K_M"
// llama.cpp's llama_ftype, written as general.file_type.
uint32_t llama_file_type(QuantMix mix);

// What the rules read about the model.
struct QuantMixModel {
  int64_t num_layers = 0;
  int64_t num_experts = 0;  // 0 for a dense model
  bool tied_embeddings = false;
};

struct TensorTypeChoice {
  GgmlType type = GgmlType::f32;
  std::string fallback;  // why the rules' type was not used; empty when it was
};

// `name` is the GGUF name, `dims` ggml's order (dims[0] the row).
TensorTypeChoice choose_tensor_type(QuantMix mix, const std::string& name,
                                    const std::vector<int64_t>& dims, const QuantMixModel& model);

}  // namespace hive
