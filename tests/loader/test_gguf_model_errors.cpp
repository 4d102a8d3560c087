// A GGUF model Hive cannot run gets one error naming the file, the key or
// tensor (its GGUF name, then the Hugging Face one it stands for) and the
// problem: each case is a tiny valid Llama with one thing wrong.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "runtime/engine/model_text.hpp"
#include "runtime/model/model.hpp"
#include "tests/common/gguf_bytes.hpp"

namespace hive {
namespace {

namespace fs = std::filesystem;
using test::GgufBytes;

// hidden 4, 2 heads of 2, 1 kv head, ffn 8, vocab 8, one layer, tied.
struct TinyLlama {
  std::string architecture = "llama";
  bool with_block_count = true;
  std::string tokenizer_model = "gpt2";
  std::string skip_tensor;     // left out
  std::string reshape_tensor;  // given dims {4, 6}
  GgufBytes bytes() const {
    GgufBytes f;
    f.add_string("general.architecture", architecture);
    f.add_u32("llama.embedding_length", 4);
    if (with_block_count) f.add_u32("llama.block_count", 1);
    f.add_u32("llama.feed_forward_length", 8);
    f.add_u32("llama.attention.head_count", 2);
    f.add_u32("llama.attention.head_count_kv", 1);
    f.add_u32("llama.context_length", 32);
    f.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    f.add_string("tokenizer.ggml.model", tokenizer_model);
    const std::pair<const char*, std::vector<uint64_t>> tensors[] = {
        {"token_embd.weight", {4, 8}},        {"output_norm.weight", {4}},
        {"blk.0.attn_norm.weight", {4}},      {"blk.0.attn_q.weight", {4, 4}},
        {"blk.0.attn_k.weight", {4, 2}},      {"blk.0.attn_v.weight", {4, 2}},
        {"blk.0.attn_output.weight", {4, 4}}, {"blk.0.ffn_norm.weight", {4}},
        {"blk.0.ffn_gate.weight", {4, 8}},    {"blk.0.ffn_up.weight", {4, 8}},
        {"blk.0.ffn_down.weight", {8, 4}}};
    for (const auto& [name, dims] : tensors)
      if (name != skip_tensor)
        f.add_f32_tensor(name, name == reshape_tensor ? std::vector<uint64_t>{4, 6} : dims);
    return f;
  }
};

// DeepSeek (deepseek2) with one dense layer: hidden 8, 2 heads, MLA with
// kv_lora_rank 4, rope 2, nope 2, v 2, no q compression, vocab 16, tied.
struct TinyDeepseek {
  std::string skip_key;
  std::string skip_tensor;
  std::string reshape_tensor;  // given dims {4, 4, 2}
  bool legacy = false;         // older files: one attn_kv_b, the heads' sizes in key/value_length
  GgufBytes bytes() const {
    GgufBytes f;
    f.add_string("general.architecture", "deepseek2");
    if (legacy) {
      f.add_u32("deepseek2.attention.key_length", 4);
      f.add_u32("deepseek2.attention.value_length", 2);
      f.add_f32_tensor("blk.0.attn_kv_b.weight", {4, 8});
    }
    const std::pair<const char*, uint32_t> keys[] = {{"embedding_length", 8},
                                                     {"block_count", 1},
                                                     {"feed_forward_length", 16},
                                                     {"context_length", 32},
                                                     {"attention.head_count", 2},
                                                     {"attention.head_count_kv", 1},
                                                     {"attention.kv_lora_rank", 4},
                                                     {"attention.key_length", 6},
                                                     {"attention.value_length", 4},
                                                     {"attention.key_length_mla", 4},
                                                     {"attention.value_length_mla", 2},
                                                     {"rope.dimension_count", 2},
                                                     {"expert_count", 2},
                                                     {"expert_used_count", 1},
                                                     {"expert_feed_forward_length", 4},
                                                     {"expert_shared_count", 0},
                                                     {"leading_dense_block_count", 1}};
    for (const auto& [key, value] : keys)
      if (key != skip_key && !(legacy && std::string(key).starts_with("attention.key_length")) &&
          !(legacy && std::string(key).starts_with("attention.value_length")))
        f.add_u32(std::string("deepseek2.") + key, value);
    f.add_f32("deepseek2.attention.layer_norm_rms_epsilon", 1e-5f);
    const std::pair<const char*, std::vector<uint64_t>> tensors[] = {
        {"token_embd.weight", {8, 16}},         {"output_norm.weight", {8}},
        {"blk.0.attn_norm.weight", {8}},        {"blk.0.attn_q.weight", {8, 8}},
        {"blk.0.attn_kv_a_mqa.weight", {8, 6}}, {"blk.0.attn_kv_a_norm.weight", {4}},
        {"blk.0.attn_k_b.weight", {2, 4, 2}},   {"blk.0.attn_v_b.weight", {4, 2, 2}},
        {"blk.0.attn_output.weight", {4, 8}},   {"blk.0.ffn_norm.weight", {8}},
        {"blk.0.ffn_gate.weight", {8, 16}},     {"blk.0.ffn_up.weight", {8, 16}},
        {"blk.0.ffn_down.weight", {16, 8}}};
    for (const auto& [name, dims] : tensors)
      if (name != skip_tensor && !(legacy && dims.size() == 3))
        f.add_f32_tensor(name, name == reshape_tensor ? std::vector<uint64_t>{4, 4, 2} : dims);
    return f;
  }
};

class GgufModelErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path = fs::temp_directory_path() /
           ("hive_gguf_model_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(::getpid()) + ".gguf");
  }
  void TearDown() override { fs::remove(path); }

  // The error `load` gives on `model`'s file, without the "<path>: " it starts with.
  template <typename Tiny>
  std::string error(const Tiny& model, const std::function<void()>& load) const {
    const std::string bytes = model.bytes().bytes();
    std::ofstream(path, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    try {
      load();
    } catch (const Error& e) {
      const std::string message = e.what();
      const std::string prefix = path.string() + ": ";
      if (message.rfind(prefix, 0) != 0) return "error without the file's path: " + message;
      return message.substr(prefix.size());
    }
    return "no error";
  }
  template <typename Tiny>
  std::string model_error(const Tiny& model) const {
    return error(model, [&] {
      CpuBackend cpu;
      Model loaded(path, cpu);
    });
  }

  fs::path path;
};

TEST_F(GgufModelErrorTest, TheTinyModelLoads) {
  EXPECT_EQ(model_error(TinyLlama{}), "no error");
  EXPECT_TRUE(load_model_config(path).tie_word_embeddings);  // no output.weight
}

TEST_F(GgufModelErrorTest, UnsupportedArchitecture) {
  TinyLlama model;
  model.architecture = "gpt2";
  EXPECT_EQ(model_error(model),
            "architecture 'gpt2' is not supported (supported: llama, qwen2, qwen3, qwen2moe, "
            "qwen3moe, deepseek2)");
}

TEST_F(GgufModelErrorTest, MissingKey) {
  TinyLlama model;
  model.with_block_count = false;
  EXPECT_EQ(model_error(model), "metadata key 'llama.block_count' is missing");
}

TEST_F(GgufModelErrorTest, MissingTensorNamesBothNames) {
  TinyLlama model;
  model.skip_tensor = "blk.0.ffn_up.weight";
  EXPECT_EQ(model_error(model),
            "missing tensor 'blk.0.ffn_up.weight' (model.layers.0.mlp.up_proj.weight)");
}

TEST_F(GgufModelErrorTest, WrongShape) {
  TinyLlama model;
  model.reshape_tensor = "blk.0.ffn_up.weight";
  EXPECT_EQ(model_error(model),
            "tensor 'blk.0.ffn_up.weight' (model.layers.0.mlp.up_proj.weight) has shape [6, 4] "
            "f32, expected [8, 4] f32");
}

TEST_F(GgufModelErrorTest, WrongQueryRowsBeforeUnpermuting) {
  TinyLlama model;
  model.reshape_tensor = "blk.0.attn_q.weight";
  EXPECT_EQ(model_error(model),
            "tensor 'blk.0.attn_q.weight' has 6 rows, expected heads x head_dim = 2 x 2");
}

TEST_F(GgufModelErrorTest, UnsupportedTokenizerModel) {
  TinyLlama model;
  model.tokenizer_model = "t5";
  EXPECT_EQ(error(model, [&] { load_tokenizer(path); }),
            "tokenizer.ggml.model 't5' is not supported (supported: gpt2, byte-level BPE; llama, "
            "SentencePiece BPE)");
}

TEST_F(GgufModelErrorTest, MissingTokenizerKey) {
  EXPECT_EQ(error(TinyLlama{}, [&] { load_tokenizer(path); }),
            "metadata key 'tokenizer.ggml.tokens' is missing");
}

TEST_F(GgufModelErrorTest, TheTinyDeepseekLoads) {
  EXPECT_EQ(model_error(TinyDeepseek{}), "no error");
  const ModelConfig c = load_model_config(path);
  EXPECT_EQ(c.architecture, Architecture::deepseek_v2);  // no gating key: softmax, as llama.cpp
  ASSERT_TRUE(c.mla.has_value());
  EXPECT_EQ(c.mla->qk_nope_head_dim, 2);
  EXPECT_EQ(c.mla->v_head_dim, 2);
  EXPECT_EQ(c.mla->q_lora_rank, 0);
}

TEST_F(GgufModelErrorTest, TheLegacyKvBLayoutLoads) {
  TinyDeepseek model;
  model.legacy = true;
  EXPECT_EQ(model_error(model), "no error");
  const ModelConfig c = load_model_config(path);
  EXPECT_EQ(c.mla->qk_nope_head_dim, 2);
  EXPECT_EQ(c.mla->v_head_dim, 2);
}

TEST_F(GgufModelErrorTest, MissingMlaKey) {
  TinyDeepseek model;
  model.skip_key = "attention.kv_lora_rank";
  EXPECT_EQ(model_error(model), "metadata key 'deepseek2.attention.kv_lora_rank' is missing");
  model.skip_key = "attention.value_length_mla";
  EXPECT_EQ(model_error(model), "metadata key 'deepseek2.attention.value_length_mla' is missing");
}

TEST_F(GgufModelErrorTest, InconsistentMlaKeys) {
  TinyDeepseek model;
  model.skip_key = "attention.key_length";  // then written as 5
  GgufBytes bytes = model.bytes();
  bytes.add_u32("deepseek2.attention.key_length", 5);
  struct Given {
    GgufBytes f;
    GgufBytes bytes() const { return f; }
  };
  EXPECT_EQ(model_error(Given{bytes}),
            "metadata keys 'deepseek2.attention.key_length' and "
            "'deepseek2.attention.value_length' are 5 and 4; with _mla keys they must be "
            "kv_lora_rank + rope.dimension_count = 6 and kv_lora_rank = 4");
}

TEST_F(GgufModelErrorTest, MissingMlaTensor) {
  TinyDeepseek model;
  model.skip_tensor = "blk.0.attn_kv_a_mqa.weight";
  EXPECT_EQ(model_error(model),
            "missing tensor 'blk.0.attn_kv_a_mqa.weight' "
            "(model.layers.0.self_attn.kv_a_proj_with_mqa.weight)");
  model.skip_tensor = "blk.0.attn_v_b.weight";
  EXPECT_EQ(model_error(model),
            "missing tensor 'blk.0.attn_v_b.weight' (attn_k_b and attn_v_b come as a pair)");
}

TEST_F(GgufModelErrorTest, WrongKvBPartShape) {
  TinyDeepseek model;
  model.reshape_tensor = "blk.0.attn_k_b.weight";
  EXPECT_EQ(model_error(model),
            "tensor 'blk.0.attn_k_b.weight' must be [heads, kv_lora_rank, qk_nope_head_dim] = "
            "[2, 4, 2] (ggml dims reversed; got [2, 4, 4])");
}

}  // namespace
}  // namespace hive
