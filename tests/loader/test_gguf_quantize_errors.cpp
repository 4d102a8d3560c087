// hive quantize's refusals of a directory it cannot write faithfully, made
// from the fixtures with one thing changed: a weight of an integer dtype,
// and a tokenizer whose pre-tokenizer GGUF's "gpt-2" cannot stand for.
// Each names the file and the problem, and leaves no output behind.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/error.hpp"
#include "runtime/loader/gguf_quantize.hpp"
#include "runtime/loader/safetensors.hpp"
#include "runtime/loader/weight_store.hpp"

namespace hive {
namespace {

namespace fs = std::filesystem;

class QuantizeRefusals : public ::testing::Test {
 protected:
  void SetUp() override { fs::create_directories(dir_); }
  void TearDown() override { fs::remove_all(root_); }

  // The error quantize_model throws for dir_, or "no error".
  std::string error() {
    try {
      quantize_model({dir_, QuantMix::q8_0, root_ / "out.gguf", false});
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  }

  fs::path root_ = fs::temp_directory_path() / ("hive_refusals_" + std::to_string(getpid()));
  fs::path dir_ = root_ / "model";
};

TEST_F(QuantizeRefusals, AnIntegerWeight) {
  const fs::path source = fs::path(HIVE_TEST_DATA) / "models" / "qwen3";
  fs::copy_file(source / "config.json", dir_ / "config.json");
  const WeightStore store(source);
  std::map<std::string, Tensor> tensors = store.tensors();
  const Tensor norm = tensors.at("model.norm.weight");
  std::vector<int32_t> ints(static_cast<size_t>(norm.numel()), 1);
  tensors["model.norm.weight"] = Tensor::view(ints.data(), DType::i32, {norm.numel()});
  write_safetensors(dir_ / "model.safetensors", tensors);
  const std::string message = error();
  EXPECT_NE(message.find("model.norm.weight"), std::string::npos) << message;
  EXPECT_NE(message.find("f32, f16 and bf16"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(root_ / "out.gguf"));
  EXPECT_FALSE(fs::exists(root_ / "out.gguf.tmp"));
}

TEST_F(QuantizeRefusals, APreTokenizerOtherThanGpt2s) {
  const fs::path source = fs::path(HIVE_SOURCE_DIR) / "models" / "hive-moe-target";
  for (const char* file : {"config.json", "model.safetensors", "tokenizer_config.json"})
    fs::copy_file(source / file, dir_ / file);
  std::ifstream in(source / "tokenizer.json");
  nlohmann::json tokenizer = nlohmann::json::parse(in);
  // Llama 3's and Qwen2's shape: a regex split, then bytes without GPT-2's regex.
  tokenizer["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"Regex", "\\p{N}{1,3}"}}}, {"behavior", "Isolated"}},
        {{"type", "ByteLevel"}, {"use_regex", false}}}}};
  std::ofstream(dir_ / "tokenizer.json") << tokenizer.dump();
  const std::string message = error();
  EXPECT_NE(message.find("tokenizer.json: pre-tokenizer"), std::string::npos) << message;
  EXPECT_NE(message.find("gpt-2"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(root_ / "out.gguf"));
}

}  // namespace
}  // namespace hive
