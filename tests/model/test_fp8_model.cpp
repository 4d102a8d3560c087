// An FP8 checkpoint in DeepSeek-V3's format (tests/data/models/
// deepseek_v3_fp8, tools/make_fp8_fixture.py): its logits against the same
// model with the weights dequantized into an f32 copy (the golden test
// holds it to transformers' logits on that copy), and the loader's errors
// for what Hive does not read, each naming the file, tensor or key.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/json_reader.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "runtime/model/model.hpp"

namespace hive {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kFp8 = fs::path(HIVE_TEST_DATA) / "models" / "deepseek_v3_fp8";

class Fp8Model : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("hive_fp8_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The fixture's config.json with `edit` applied, into dir_.
  template <class Edit>
  void write_config(const Edit& edit) {
    json config = read_json_file(kFp8 / "config.json");
    edit(config);
    std::ofstream(dir_ / "config.json") << config.dump(2);
  }
  void write_tensors(const std::map<std::string, Tensor>& tensors) {
    write_safetensors(dir_ / "model.safetensors", tensors);
  }
  // The fixture's tensors as the file holds them (scales included).
  std::map<std::string, Tensor> file_tensors() {
    fixture_ = std::make_unique<SafetensorsFile>(kFp8 / "model.safetensors");
    return fixture_->tensors();
  }
  // Loading dir_ fails with a message containing `needle`.
  void expect_load_error(const std::string& needle) {
    CpuBackend cpu;
    try {
      Model model(dir_, cpu);
      ADD_FAILURE() << "loaded; expected an error with: " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }

  fs::path dir_;
  std::unique_ptr<SafetensorsFile> fixture_;
  std::vector<std::vector<float>> owned_;
};

// Logits of every position of prompt + continuation, in one prefill.
std::vector<float> all_logits(Model& model, CpuBackend& cpu, const std::vector<int32_t>& tokens) {
  const auto n = static_cast<int64_t>(tokens.size());
  const int64_t vocab = model.config().vocab_size;
  const int32_t block_size = 4;
  const auto blocks = static_cast<int32_t>((n + block_size - 1) / block_size);
  PagedKVCache cache(cpu, model.config(), blocks + 1, block_size, 0, DType::f32);
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  for (int32_t b = 0; b < blocks; ++b) table[static_cast<size_t>(b)] = b + 1;
  ForwardBatch batch;
  batch.add_run(0, tokens, table, block_size);
  for (int32_t row = 0; row < n; ++row) batch.logits_rows.push_back(row);
  std::vector<float> logits(static_cast<size_t>(n * vocab));
  model.forward(batch, cache, Tensor::view(logits.data(), DType::f32, {n, vocab}));
  return logits;
}

TEST_F(Fp8Model, LogitsEqualThoseOfTheDequantizedCopy) {
  // The copy: every f8_e4m3 weight times its block scales, in f32, and no
  // quantization_config.
  const WeightStore store(kFp8);
  std::map<std::string, Tensor> copy;
  int fp8_weights = 0;
  for (const auto& [name, t] : store.tensors()) {
    if (t.dtype != DType::f8_e4m3) {
      copy[name] = t;
      continue;
    }
    ++fp8_weights;
    ASSERT_NE(t.block_scales, nullptr) << name;
    const int64_t rows = t.shape[0], k = t.shape[1], scale_cols = (k + kFp8Block - 1) / kFp8Block;
    std::vector<float>& values = owned_.emplace_back(static_cast<size_t>(rows * k));
    for (int64_t r = 0; r < rows; ++r)
      f8_e4m3_row_to_f32(t.as<uint8_t>() + r * k, t.block_scales + r / kFp8Block * scale_cols, k,
                         values.data() + r * k);
    copy[name] = Tensor::view(values.data(), DType::f32, {rows, k});
  }
  EXPECT_EQ(fp8_weights, 72);  // attention, dense MLP, shared and routed experts
  EXPECT_EQ(store.tensors().count("model.layers.0.self_attn.o_proj.weight_scale_inv"), 0u)
      << "scales ride on their weights, not as tensors of their own";
  write_tensors(copy);
  write_config([](json& c) { c.erase("quantization_config"); });

  CpuBackend cpu;
  Model fp8(kFp8, cpu), dequantized(dir_, cpu);
  const SafetensorsFile golden(kFp8 / "golden.safetensors");
  for (int i = 0; golden.tensors().count("prompt_" + std::to_string(i)); ++i) {
    std::vector<int32_t> tokens;
    for (const char* part : {"prompt_", "greedy_"}) {
      const Tensor& t = golden.tensors().at(part + std::to_string(i));
      tokens.insert(tokens.end(), t.as<int32_t>(), t.as<int32_t>() + t.numel());
    }
    const std::vector<float> a = all_logits(fp8, cpu, tokens);
    const std::vector<float> b = all_logits(dequantized, cpu, tokens);
    double max_diff = 0, max_ref = 0;
    for (size_t j = 0; j < a.size(); ++j) {
      max_diff = std::max(max_diff, std::abs(double{a[j]} - b[j]));
      max_ref = std::max(max_ref, std::abs(double{b[j]}));
    }
    // The AVX-512 kernel and the reference give the dequantized weights'
    // bits exactly; the AVX2 path's f32 kernel sums in another order.
    EXPECT_LE(max_diff / max_ref, 1e-6) << "prompt " << i << ": max |diff| " << max_diff;
    std::printf("prompt %d: FP8 against its dequantized copy, relative difference %.3g\n", i,
                max_diff / max_ref);
  }
}

TEST_F(Fp8Model, AMissingOrMisshapenScaleIsNamed) {
  auto tensors = file_tensors();
  const std::string weight = "model.layers.1.self_attn.kv_b_proj.weight";
  const Tensor scale = tensors.at(weight + "_scale_inv");
  ASSERT_EQ(scale.shape_string(), "[2, 1] f32");
  fs::copy_file(kFp8 / "config.json", dir_ / "config.json");

  tensors.erase(weight + "_scale_inv");
  write_tensors(tensors);
  expect_load_error("tensor '" + weight + "' is f8_e4m3 but '" + weight +
                    "_scale_inv' (its 128 x 128 block scales) is missing");

  tensors[weight + "_scale_inv"] = scale.rows(0, 1);
  write_tensors(tensors);
  expect_load_error("tensor '" + weight + "_scale_inv' has shape [1, 1] f32, expected [2, 1] f32");
}

TEST_F(Fp8Model, ScalesBelongToFp8Weights) {
  auto tensors = file_tensors();
  fs::copy_file(kFp8 / "config.json", dir_ / "config.json");
  tensors["model.norm.weight_scale_inv"] =
      tensors.at("model.layers.0.mlp.up_proj.weight_scale_inv");
  write_tensors(tensors);
  expect_load_error(
      "tensor 'model.norm.weight_scale_inv' scales 'model.norm.weight', which is "
      "not f8_e4m3");
}

TEST_F(Fp8Model, AnFp8EmbeddingOrNormIsRefused) {
  auto tensors = file_tensors();
  fs::copy_file(kFp8 / "config.json", dir_ / "config.json");
  // The embedding as FP8, with scales of the right shape.
  std::vector<uint8_t> bytes(512 * 64, 0x38);
  std::vector<float> scales(4, 1.0f);
  tensors["model.embed_tokens.weight"] = Tensor::view(bytes.data(), DType::f8_e4m3, {512, 64});
  tensors["model.embed_tokens.weight_scale_inv"] = Tensor::view(scales.data(), DType::f32, {4, 1});
  write_tensors(tensors);
  expect_load_error("tensor 'model.embed_tokens.weight' is f8_e4m3; an FP8 checkpoint's embedding");

  tensors = file_tensors();
  std::vector<float> one(1, 1.0f);
  tensors["model.layers.0.input_layernorm.weight"] =
      Tensor::view(bytes.data(), DType::f8_e4m3, {64});
  tensors["model.layers.0.input_layernorm.weight_scale_inv"] =
      Tensor::view(one.data(), DType::f32, {1, 1});
  write_tensors(tensors);
  expect_load_error(
      "tensor 'model.layers.0.input_layernorm.weight' is f8_e4m3 with shape [64] "
      "f8_e4m3; FP8 tensors must be 2-d weights");
}

TEST_F(Fp8Model, Fp8TensorsNeedTheQuantizationConfig) {
  fs::copy_file(kFp8 / "model.safetensors", dir_ / "model.safetensors");
  write_config([](json& c) { c.erase("quantization_config"); });
  expect_load_error("is FP8, but config.json has no quantization_config");
}

// transformers' FineGrainedFP8Config defaults: e4m3, dynamic, [128, 128].
TEST_F(Fp8Model, AbsentKeysMeanFineGrainedFp8ConfigsDefaults) {
  fs::copy_file(kFp8 / "model.safetensors", dir_ / "model.safetensors");
  write_config([](json& c) {
    json& q = c["quantization_config"];
    q.erase("fmt");
    q.erase("activation_scheme");
    q.erase("weight_block_size");
  });
  CpuBackend cpu;
  const Model model(dir_, cpu);
  EXPECT_TRUE(model.config().fp8_block_weights);
}

TEST_F(Fp8Model, OtherQuantizationConfigsAreRefusedByKey) {
  fs::copy_file(kFp8 / "model.safetensors", dir_ / "model.safetensors");
  const auto refused = [&](const char* key, const json& value, const std::string& needle) {
    SCOPED_TRACE(key);
    write_config([&](json& c) { c["quantization_config"][key] = value; });
    expect_load_error("config.json: quantization_config: " + needle);
  };
  refused("weight_block_size", json::array({64, 64}),
          "weight_block_size [64,64] is not supported (supported: [128, 128])");
  refused("weight_block_size", nullptr, "weight_block_size null is not supported");
  refused("activation_scheme", "static", "activation_scheme 'static' is not supported");
  refused("fmt", "e5m2", "fmt 'e5m2' is not supported");
  refused("scale_fmt", "ue8m0", "scale_fmt 'ue8m0' is not supported");
  refused("quant_method", "gptq", "quant_method 'gptq' is not supported (supported: fp8)");
}

}  // namespace
}  // namespace hive
