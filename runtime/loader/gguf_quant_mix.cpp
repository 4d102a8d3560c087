#include "runtime/loader/gguf_quant_mix.hpp"

#include <cctype>
#include <cstdio>

#include "base/error.hpp"

namespace hive {

namespace {

bool contains(const std::string& name, std::string_view part) {
  return name.find(part) != std::string::npos;
}

// llama.cpp quantizes only 2-D and 3-D weights, never norms or routers.
bool quantizable(const std::string& name, const std::vector<int64_t>& dims) {
  return dims.size() >= 2 && name.ends_with("weight") && !contains(name, "_norm.weight") &&
         !contains(name, "ffn_gate_inp.weight") && name != "rope_freqs.weight";
}

// llama.cpp's use_more_bits: the first and last eighth of the layers and
// every third layer between get more bits.
bool use_more_bits(int64_t layer, int64_t layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

// N of "blk.N....".
int64_t layer_of(const std::string& name) {
  long long layer = -1;
  check(std::sscanf(name.c_str(), "blk.%lld.", &layer) == 1, "tensor '", name,
        "' names no layer (blk.N.)");
  return layer;
}

GgmlType default_type(QuantMix mix) {
  switch (mix) {
    case QuantMix::q8_0:
      return GgmlType::q8_0;
    case QuantMix::q4_0:
      return GgmlType::q4_0;
    case QuantMix::q4_k_m:
      return GgmlType::q4_k;
  }
  return GgmlType::q8_0;
}

// llama_tensor_get_type's rules for these three file types.
GgmlType rule_type(QuantMix mix, const std::string& name, const std::vector<int64_t>& dims,
                   const QuantMixModel& model) {
  const GgmlType base = default_type(mix);
  const bool eight_experts = model.num_experts == 8;
  const bool k_m = mix == QuantMix::q4_k_m;
  if (name == "output.weight" || (model.tied_embeddings && name == "token_embd.weight")) {
    if (dims[0] % ggml_type_info(base).block_size != 0) return GgmlType::q8_0;
    return base == GgmlType::q8_0 ? GgmlType::q8_0 : GgmlType::q6_k;
  }
  if (contains(name, "attn_v.weight")) {
    GgmlType type = base;
    if (k_m && use_more_bits(layer_of(name), model.num_layers)) type = GgmlType::q6_k;
    return eight_experts ? GgmlType::q8_0 : type;
  }
  if (contains(name, "attn_k.weight")) return eight_experts ? GgmlType::q8_0 : base;
  if (contains(name, "ffn_down"))
    return k_m && use_more_bits(layer_of(name), model.num_layers) ? GgmlType::q6_k : base;
  if (contains(name, "attn_output.weight") && k_m && eight_experts) return GgmlType::q5_k;
  return base;
}

bool fits(GgmlType type, int64_t row) {
  return row % ggml_type_info(type).block_size == 0;
}

}  // namespace

std::optional<QuantMix> parse_quant_mix(std::string_view name) {
  std::string lower;
  for (const char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "q8_0") return QuantMix::q8_0;
  if (lower == "q4_0") return QuantMix::q4_0;
  if (lower == "q4_k_m") return QuantMix::q4_k_m;
  return std::nullopt;
}

std::string_view quant_mix_name(QuantMix mix) {
  switch (mix) {
    case QuantMix::q8_0:
      return "Q8_0";
    case QuantMix::q4_0:
      return "Q4_0";
    case QuantMix::q4_k_m:
      return "Q4_K_M";
  }
  return "?";
}

uint32_t llama_file_type(QuantMix mix) {
  switch (mix) {
    case QuantMix::q8_0:
      return 7;  // LLAMA_FTYPE_MOSTLY_Q8_0
    case QuantMix::q4_0:
      return 2;  // LLAMA_FTYPE_MOSTLY_Q4_0
    case QuantMix::q4_k_m:
      return 15;  // LLAMA_FTYPE_MOSTLY_Q4_K_M
  }
  return 0;
}

TensorTypeChoice choose_tensor_type(QuantMix mix, const std::string& name,
                                    const std::vector<int64_t>& dims, const QuantMixModel& model) {
  if (!quantizable(name, dims)) return {GgmlType::f32, ""};
  const GgmlType wanted = rule_type(mix, name, dims, model);
  const int64_t row = dims[0];
  if (fits(wanted, row)) return {wanted, ""};
  // llama.cpp's fallbacks to a type of 32-blocks.
  GgmlType type = GgmlType::q8_0;  // Q6_K's, and Q8_0's own
  if (wanted == GgmlType::q4_0) type = GgmlType::q4_0;
  if (wanted == GgmlType::q4_k) type = GgmlType::q5_0;
  if (wanted == GgmlType::q5_k) type = GgmlType::q5_1;
  std::string note;
  if (!fits(type, row)) {
    type = GgmlType::f16;
    note = " (no 32-block fits)";
  }
  return {type, str_cat("row of ", row, " is not a whole number of ", ggml_type_info(wanted).name,
                        " blocks (", ggml_type_info(wanted).block_size,
                        "): ", ggml_type_info(type).name, note)};
}

}  // namespace hive
