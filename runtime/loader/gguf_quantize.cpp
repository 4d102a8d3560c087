#include "runtime/loader/gguf_quantize.hpp"

#include <cstring>
#include <map>

#include "base/error.hpp"
#include "kernels/dtype.hpp"
#include "kernels/quant/quantize.hpp"
#include "runtime/loader/gguf_config.hpp"
#include "runtime/loader/gguf_model_metadata.hpp"
#include "runtime/loader/gguf_tensor_names.hpp"
#include "runtime/loader/gguf_writer.hpp"
#include "runtime/loader/model_config.hpp"
#include "runtime/loader/weight_store.hpp"

namespace hive {

namespace {

namespace fs = std::filesystem;

// One GGUF tensor and where its values come from.
struct Plan {
  std::string name;
  std::vector<int64_t> dims;       // ggml order
  std::vector<Tensor> sources;     // one, or one per expert in order
  std::vector<std::string> names;  // the sources' Hugging Face names, for messages
  int64_t rope_heads = 0;          // > 0: Llama's q/k, rows permuted into rope pairs
  std::vector<float> values;       // a tensor made here (rope_freqs), else empty
  TensorTypeChoice choice;
};

bool permutes_rope_rows(const ModelConfig& c) {
  return c.architecture == Architecture::llama || c.architecture == Architecture::mistral ||
         c.architecture == Architecture::mixtral;
}

// The Hugging Face unit (row, or element of a bias) that GGML's unit g holds.
int64_t rope_source_unit(int64_t g, int64_t units, int64_t heads) {
  const int64_t d = units / heads, h = g / d, r = g % d;
  return h * d + (r % 2) * (d / 2) + r / 2;
}

float element(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::f32:
      return t.as<const float>()[i];
    case DType::f16:
      return f16_to_f32(t.as<const uint16_t>()[i]);
    default:
      return bf16_to_f32(t.as<const uint16_t>()[i]);
  }
}

// Row `row` of the tensor in file order (dims[0] values) as f32.
void read_row(const Plan& p, int64_t row, float* out) {
  const int64_t width = p.dims[0];
  if (!p.values.empty()) {
    std::memcpy(out, p.values.data() + row * width, static_cast<size_t>(width) * sizeof(float));
    return;
  }
  const Tensor& first = p.sources[0];
  const int64_t rows_per_source = first.numel() / width;
  const Tensor& source = p.sources[static_cast<size_t>(row / rows_per_source)];
  int64_t r = row % rows_per_source;
  if (p.rope_heads > 0 && source.ndim == 2) r = rope_source_unit(r, rows_per_source, p.rope_heads);
  for (int64_t i = 0; i < width; ++i) {
    const int64_t k =
        p.rope_heads > 0 && source.ndim == 1 ? rope_source_unit(i, width, p.rope_heads) : i;
    out[i] = element(source, r * width + k);
  }
}

void encode_row(GgmlType type, const float* x, int64_t n, std::byte* out) {
  switch (type) {
    case GgmlType::f32:
      std::memcpy(out, x, static_cast<size_t>(n) * sizeof(float));
      return;
    case GgmlType::f16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_f16(x[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    case GgmlType::q8_0:
      return quantize_row_q8_0(x, n, reinterpret_cast<BlockQ8_0*>(out));
    case GgmlType::q4_0:
      return quantize_row_q4_0(x, n, reinterpret_cast<BlockQ4_0*>(out));
    case GgmlType::q5_0:
      return quantize_row_q5_0(x, n, reinterpret_cast<BlockQ5_0*>(out));
    case GgmlType::q5_1:
      return quantize_row_q5_1(x, n, reinterpret_cast<BlockQ5_1*>(out));
    case GgmlType::q4_k:
      return quantize_row_q4_k(x, n, reinterpret_cast<BlockQ4_K*>(out));
    case GgmlType::q5_k:
      return quantize_row_q5_k(x, n, reinterpret_cast<BlockQ5_K*>(out));
    case GgmlType::q6_k:
      return quantize_row_q6_k(x, n, reinterpret_cast<BlockQ6_K*>(out));
    default:
      fail("no encoder for ", ggml_type_info(type).name);
  }
}

std::vector<std::byte> encode(const Plan& p, uint64_t nbytes) {
  std::vector<std::byte> bytes(nbytes);
  const int64_t width = p.dims[0];
  int64_t rows = 1;
  for (size_t i = 1; i < p.dims.size(); ++i) rows *= p.dims[i];
  const uint64_t row_bytes = nbytes / static_cast<uint64_t>(rows);
  std::vector<float> row(static_cast<size_t>(width));
  for (int64_t r = 0; r < rows; ++r) {
    read_row(p, r, row.data());
    encode_row(p.choice.type, row.data(), width, bytes.data() + r * row_bytes);
  }
  return bytes;
}

// The layer N of "model.layers.N.…", or -1.
int64_t hf_layer(const std::string& hf) {
  constexpr std::string_view prefix = "model.layers.";
  if (!hf.starts_with(prefix)) return -1;
  const size_t end = hf.find('.', prefix.size());
  if (end == std::string::npos || end == prefix.size()) return -1;
  int64_t layer = 0;
  for (size_t i = prefix.size(); i < end; ++i) {
    if (hf[i] < '0' || hf[i] > '9' || layer > 1'000'000) return -1;
    layer = layer * 10 + (hf[i] - '0');
  }
  return layer;
}

// DeepSeek's kv_b_proj [heads * (nope + v), rank] as the converter splits it
// (gguf_weights.cpp joins it back): attn_k_b [heads, rank, nope], each
// head's k rows transposed, and attn_v_b [heads, v, rank].
void plan_kv_b(const ModelConfig& c, const Tensor& kv_b, const std::string& block,
               std::map<std::string, Plan>& plans) {
  const MlaConfig& m = *c.mla;
  const int64_t heads = c.num_heads, rank = m.kv_lora_rank, nope = m.qk_nope_head_dim;
  const int64_t v = m.v_head_dim;
  Plan& k = plans[block + "attn_k_b.weight"];
  k.name = block + "attn_k_b.weight";
  k.dims = {nope, rank, heads};
  k.sources = {kv_b};  // counted once in the report; the values are read from k.values
  Plan& vb = plans[block + "attn_v_b.weight"];
  vb.name = block + "attn_v_b.weight";
  vb.dims = {rank, v, heads};
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t a = 0; a < rank; ++a)
      for (int64_t d = 0; d < nope; ++d)
        k.values.push_back(element(kv_b, (h * (nope + v) + d) * rank + a));
    for (int64_t e = 0; e < v; ++e)
      for (int64_t a = 0; a < rank; ++a)
        vb.values.push_back(element(kv_b, (h * (nope + v) + nope + e) * rank + a));
  }
}

void check_source(const std::string& name, const Tensor& t, const fs::path& dir) {
  check(t.dtype == DType::f32 || t.dtype == DType::f16 || t.dtype == DType::bf16, dir.string(),
        ": tensor '", name, "' is ", t.shape_string(),
        "; hive quantize reads f32, f16 and bf16 weights");
  check(t.is_contiguous(), dir.string(), ": tensor '", name, "' is not contiguous");
}

// Every GGUF tensor of the directory, in the order the names sort (llama.cpp
// sorts by layer when it quantizes; the file order is free).
std::vector<Plan> plan_tensors(const ModelConfig& c, const WeightStore& store,
                               const fs::path& dir) {
  std::map<std::string, Plan> plans;
  std::map<std::string, std::map<int64_t, std::pair<Tensor, std::string>>> stacks;
  for (const auto& [hf, tensor] : store.tensors()) {
    if (hf.ends_with("rotary_emb.inv_freq")) continue;  // computed, not a weight
    if (c.tie_word_embeddings && hf == "lm_head.weight") continue;
    // DeepSeek-V3's multi-token-prediction layers, which the converter leaves out.
    if (c.mla && hf_layer(hf) >= c.num_layers) continue;
    const std::optional<GgufTensorSlot> slot = gguf_tensor_slot(hf);
    check(slot.has_value(), dir.string(), ": tensor '", hf,
          "' has no place in llama.cpp's GGUF layout");
    check_source(hf, tensor, dir);
    if (c.mla && hf.ends_with(".self_attn.kv_b_proj.weight")) {
      check(tensor.ndim == 2 && tensor.shape[1] == c.mla->kv_lora_rank &&
                tensor.shape[0] == c.num_heads * (c.mla->qk_nope_head_dim + c.mla->v_head_dim),
            dir.string(), ": tensor '", hf, "' is ", tensor.shape_string(),
            ", expected [heads * (qk_nope_head_dim + v_head_dim), kv_lora_rank]");
      plan_kv_b(c, tensor, slot->name.substr(0, slot->name.find("attn_kv_b")), plans);
      continue;
    }
    if (slot->expert) {
      stacks[slot->name][*slot->expert] = {tensor, hf};
      continue;
    }
    Plan& p = plans[slot->name];
    p.name = slot->name;
    p.sources = {tensor};
    p.names = {hf};
    p.dims.assign(tensor.shape.rbegin() + (kMaxDims - tensor.ndim), tensor.shape.rend());
    // Qwen2-MoE's shared-expert gate is [1, hidden]: one row, llama.cpp's [hidden].
    if (p.name.ends_with("ffn_gate_inp_shexp.weight") && p.dims.size() == 2 && p.dims[1] == 1)
      p.dims.pop_back();
    const bool q_or_k = p.name.find(".attn_q.") != std::string::npos ||
                        p.name.find(".attn_k.") != std::string::npos;
    if (permutes_rope_rows(c) && q_or_k)
      p.rope_heads = p.name.find(".attn_q.") != std::string::npos ? c.num_heads : c.num_kv_heads;
  }
  for (auto& [name, experts] : stacks) {
    Plan& p = plans[name];
    p.name = name;
    for (int64_t e = 0; e < static_cast<int64_t>(experts.size()); ++e) {
      const auto it = experts.find(e);
      check(it != experts.end(), dir.string(), ": ", name, " lacks expert ", e, " of ",
            experts.size());
      check(it->second.first.ndim == 2, dir.string(), ": expert tensor '", it->second.second,
            "' must have 2 dimensions");
      p.sources.push_back(it->second.first);
      p.names.push_back(it->second.second);
    }
    const Tensor& first = p.sources[0];
    p.dims = {first.shape[1], first.shape[0], static_cast<int64_t>(p.sources.size())};
    for (size_t e = 0; e < p.sources.size(); ++e)
      check(p.sources[e].shape[0] == first.shape[0] && p.sources[e].shape[1] == first.shape[1],
            dir.string(), ": expert tensor '", p.names[e], "' is ", p.sources[e].shape_string(),
            ", expert 0's is ", first.shape_string());
  }
  std::vector<Plan> out;
  for (auto& [name, p] : plans) out.push_back(std::move(p));
  if (c.rope.type == "llama3") {
    Plan p;
    p.name = "rope_freqs.weight";
    p.values = llama3_rope_factors(c.rope, c.head_dim);
    p.dims = {static_cast<int64_t>(p.values.size())};
    out.push_back(std::move(p));
  }
  return out;
}

void check_output(const QuantizeOptions& o) {
  check(!o.out.empty(), "no output file given");
  check(!fs::is_directory(o.out), "'", o.out.string(), "' is a directory; give a file name");
  check(o.force || !fs::exists(o.out), "'", o.out.string(), "' exists; pass --force to replace it");
  const fs::path parent = o.out.has_parent_path() ? o.out.parent_path() : fs::path(".");
  check(fs::is_directory(parent), "cannot write '", o.out.string(), "': directory '",
        parent.string(), "' does not exist");
  check(!is_gguf_model(o.model_dir), "'", o.model_dir.string(),
        "' is a GGUF file; hive quantize reads a Hugging Face safetensors directory");
}

// general.name: the directory's own name ("models/x/" gives "x").
std::string model_name(const fs::path& dir) {
  fs::path path = fs::absolute(dir).lexically_normal();
  if (path.filename().empty()) path = path.parent_path();
  return path.filename().empty() ? "model" : path.filename().string();
}

}  // namespace

QuantizeReport quantize_model(const QuantizeOptions& o,
                              const std::function<void(const QuantizedTensor&)>& progress) {
  check_output(o);
  const ModelConfig config = load_model_config(o.model_dir);
  GgufWriter writer;
  add_model_metadata(writer, config, model_name(o.model_dir));
  writer.add("general.file_type", llama_file_type(o.mix));
  writer.add("general.quantization_version", uint32_t{2});  // ggml's GGML_QNT_VERSION
  QuantizeReport report;
  report.tokenizer = add_tokenizer_metadata(writer, o.model_dir, config);
  if (!report.tokenizer)
    report.notes.push_back(str_cat(o.model_dir.string(),
                                   " has no tokenizer.json: the file holds no tokenizer (llama.cpp "
                                   "needs one; Hive loads the weights)"));
  // llama.cpp's llama, qwen2 and qwen3 attend to the whole context.
  if (config.sliding_window > 0 && config.sliding_window < config.max_position_embeddings)
    report.notes.push_back(str_cat("sliding_window ", config.sliding_window,
                                   " is not written (GGUF's ", gguf_architecture(config),
                                   " has none): past ", config.sliding_window,
                                   " tokens the file computes full attention"));
  const WeightStore store(o.model_dir);
  std::vector<Plan> plans = plan_tensors(config, store, o.model_dir);
  const QuantMixModel model{config.num_layers, config.num_experts, config.tie_word_embeddings};
  for (Plan& p : plans) {
    p.choice = choose_tensor_type(o.mix, p.name, p.dims, model);
    writer.add_tensor(p.name, p.choice.type, p.dims);
    report.tensors.push_back({p.name, p.choice.type, p.dims,
                              writer.tensor_bytes(writer.tensor_count() - 1), p.choice.fallback});
    for (const Tensor& t : p.sources) report.source_bytes += t.nbytes();
  }
  writer.write(o.out, [&](size_t i) {
    std::vector<std::byte> bytes = encode(plans[i], report.tensors[i].bytes);
    if (progress) progress(report.tensors[i]);
    return bytes;
  });
  report.file_bytes = fs::file_size(o.out);
  return report;
}

}  // namespace hive
