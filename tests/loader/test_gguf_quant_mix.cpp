// gguf_quant_mix (runtime/loader/gguf_quant_mix.hpp): llama.cpp's type rules
// for the file types hive quantize writes, on model shapes the fixtures do
// not have (a dense 32-layer Llama), and the fallbacks of rows that are not
// whole blocks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/loader/gguf_quant_mix.hpp"

namespace hive {
namespace {

// A dense 32-layer Llama: llama.cpp gives Q6_K to attn_v and ffn_down in 16
// of the 32 layers (the first and last 4, and every third from layer 6).
TEST(QuantizeMix, UseMoreBitsLayersOfADenseModel) {
  const QuantMixModel llama{32, 0, false};
  std::vector<int> more;
  for (int layer = 0; layer < 32; ++layer) {
    const std::string b = "blk." + std::to_string(layer) + ".";
    const GgmlType v =
        choose_tensor_type(QuantMix::q4_k_m, b + "attn_v.weight", {4096, 1024}, llama).type;
    const GgmlType down =
        choose_tensor_type(QuantMix::q4_k_m, b + "ffn_down.weight", {14336, 4096}, llama).type;
    EXPECT_EQ(v, down) << layer;
    if (v == GgmlType::q6_k) more.push_back(layer);
    EXPECT_EQ(choose_tensor_type(QuantMix::q4_k_m, b + "ffn_up.weight", {4096, 14336}, llama).type,
              GgmlType::q4_k);
  }
  EXPECT_EQ(more, (std::vector<int>{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31}));
  EXPECT_EQ(choose_tensor_type(QuantMix::q4_k_m, "output.weight", {4096, 128256}, llama).type,
            GgmlType::q6_k);
  EXPECT_EQ(choose_tensor_type(QuantMix::q4_0, "output.weight", {4096, 128256}, llama).type,
            GgmlType::q6_k);
  EXPECT_EQ(choose_tensor_type(QuantMix::q8_0, "output.weight", {4096, 128256}, llama).type,
            GgmlType::q8_0);
  EXPECT_EQ(choose_tensor_type(QuantMix::q4_k_m, "token_embd.weight", {4096, 128256}, llama).type,
            GgmlType::q4_k);
  EXPECT_EQ(choose_tensor_type(QuantMix::q4_k_m, "blk.0.attn_norm.weight", {4096}, llama).type,
            GgmlType::f32);
}

TEST(QuantizeMix, RowsThatDoNotFitFallBack) {
  const QuantMixModel model{2, 0, false};
  const TensorTypeChoice k =
      choose_tensor_type(QuantMix::q4_k_m, "blk.0.ffn_up.weight", {96, 8}, model);
  EXPECT_EQ(k.type, GgmlType::q5_0);
  EXPECT_EQ(k.fallback, "row of 96 is not a whole number of Q4_K blocks (256): Q5_0");
  const TensorTypeChoice five =
      choose_tensor_type(QuantMix::q4_k_m, "blk.0.attn_output.weight", {96, 8}, {2, 8, false});
  EXPECT_EQ(five.type, GgmlType::q5_1);  // Mixtral's Q5_K attn_output
  EXPECT_EQ(choose_tensor_type(QuantMix::q4_k_m, "blk.0.ffn_up.weight", {48, 8}, model).type,
            GgmlType::f16);
  const TensorTypeChoice six =
      choose_tensor_type(QuantMix::q4_k_m, "output.weight", {96, 8}, model);
  EXPECT_EQ(six.type, GgmlType::q8_0);
  const TensorTypeChoice half =
      choose_tensor_type(QuantMix::q8_0, "blk.0.ffn_down.weight", {48, 8}, model);
  EXPECT_EQ(half.type, GgmlType::f16);
  EXPECT_NE(half.fallback.find("row of 48"), std::string::npos) << half.fallback;
  EXPECT_EQ(choose_tensor_type(QuantMix::q4_0, "blk.0.ffn_down.weight", {64, 8}, model).fallback,
            "");
}

}  // namespace
}  // namespace hive
