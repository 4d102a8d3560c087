// Bad checkpoints get a clear error naming the file and the problem, never a
// crash: each case of the loader's validation, one test each.
#include <gtest/gtest.h>

#include <functional>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "runtime/loader/safetensors.hpp"
#include "runtime/model/model.hpp"

namespace hive {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kModels = fs::path(HIVE_TEST_DATA) / "models";

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("hive_loader_" +
           std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
           std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  // Writes a raw safetensors file: 8-byte length, header text, data bytes.
  fs::path write_raw(const std::string& header, size_t data_bytes, uint64_t declared_len = 0) {
    const fs::path path = dir / "model.safetensors";
    std::ofstream out(path, std::ios::binary);
    const uint64_t len = declared_len ? declared_len : header.size();
    out.write(reinterpret_cast<const char*>(&len), 8);
    out << header;
    const std::string data(data_bytes, '\x01');
    out << data;
    return path;
  }

  // Expects `fn` to throw a hive::Error whose message contains every needle.
  template <class Fn>
  void expect_error(Fn&& fn, std::initializer_list<std::string> needles) {
    try {
      fn();
      ADD_FAILURE() << "no error thrown";
    } catch (const Error& e) {
      for (const auto& needle : needles)
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
            << "message '" << e.what() << "' lacks '" << needle << "'";
    }
  }

  // A copy of a fixture model whose config and tensors can be edited.
  void copy_model(const std::string& name) {
    for (const auto& entry : fs::directory_iterator(kModels / name))
      fs::copy_file(entry.path(), dir / entry.path().filename());
  }
  json read_config() { return json::parse(std::ifstream(dir / "config.json")); }
  void write_config(const json& config) { std::ofstream(dir / "config.json") << config.dump(2); }

  fs::path dir;
  CpuBackend cpu;
};

TEST_F(LoaderTest, ReadsAValidFile) {
  const auto path = write_raw(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
                              R"("__metadata__":{"format":"pt"}})",
                              16);
  const SafetensorsFile file(path);
  ASSERT_EQ(file.tensors().size(), 1u);
  EXPECT_EQ(file.tensors().at("a").shape_string(), "[2, 2] f32");
  EXPECT_EQ(file.metadata().at("format"), "pt");
}

// Every JSON file of a checkpoint is read by base/json_reader.hpp: a key
// given twice is an error naming the file and the key.
TEST_F(LoaderTest, ATensorNamedTwiceInTheHeader) {
  const auto path = write_raw(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                              R"("a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                              16);
  expect_error([&] { SafetensorsFile f(path); },
               {path.string(), "header", "key \"a\" given twice"});
}

TEST_F(LoaderTest, MetadataValuesMustBeStrings) {
  const auto path = write_raw(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                              R"("__metadata__":{"format":"pt","step":3}})",
                              8);
  expect_error([&] { SafetensorsFile f(path); },
               {path.string(), "__metadata__[\"step\"] must be a string (got number)"});
  const auto twice = write_raw(R"({"__metadata__":{"format":"pt","format":"np"}})", 0);
  expect_error([&] { SafetensorsFile f(twice); },
               {twice.string(), "key \"format\" given twice in the object at /__metadata__"});
}

TEST_F(LoaderTest, AKeyGivenTwiceInConfigOrGenerationConfig) {
  copy_model("llama");
  std::string text;
  {
    std::ifstream in(dir / "config.json");
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t brace = text.find('{');
  ASSERT_NE(brace, std::string::npos);
  std::ofstream(dir / "config.json") << text.substr(0, brace + 1) << "\"vocab_size\": 7, "
                                     << text.substr(brace + 1);
  expect_error([&] { Model m(dir, cpu); }, {"config.json", "key \"vocab_size\" given twice"});
  std::ofstream(dir / "config.json") << text;
  std::ofstream(dir / "generation_config.json") << R"({"eos_token_id": 1, "eos_token_id": 2})";
  expect_error([&] { load_model_config(dir); },
               {"generation_config.json", "key \"eos_token_id\" given twice"});
}

TEST_F(LoaderTest, ATensorMappedTwiceInTheShardIndex) {
  copy_model("qwen2");
  const auto index = json::parse(std::ifstream(dir / "model.safetensors.index.json"));
  const auto first = index["weight_map"].begin();
  const std::string name = first.key();
  std::string text = index.dump();
  const std::string entry = json(name).dump() + ":" + first.value().dump();
  const size_t at = text.find(entry);
  ASSERT_NE(at, std::string::npos);
  text.insert(at, entry + ",");
  std::ofstream(dir / "model.safetensors.index.json") << text;
  expect_error([&] { Model m(dir, cpu); },
               {"model.safetensors.index.json", "key \"" + name + "\" given twice",
                "/weight_map"});
}

TEST_F(LoaderTest, FileShorterThanTheLengthPrefix) {
  const fs::path path = dir / "model.safetensors";
  std::ofstream(path) << "abc";
  expect_error([&] { SafetensorsFile f(path); }, {path.string(), "truncated", "3 bytes"});
}

TEST_F(LoaderTest, HeaderLongerThanTheFile) {
  const auto path = write_raw(R"({})", 0, 1000);
  expect_error([&] { SafetensorsFile f(path); },
               {path.string(), "header length 1000", "longer than the file"});
}

TEST_F(LoaderTest, HeaderIsNotJson) {
  const auto path = write_raw("{not json", 0);
  expect_error([&] { SafetensorsFile f(path); }, {path.string(), "not valid JSON"});
}

TEST_F(LoaderTest, UnsupportedDtype) {
  const auto path = write_raw(R"({"w":{"dtype":"F8_E5M2","shape":[4],"data_offsets":[0,4]}})", 4);
  expect_error([&] { SafetensorsFile f(path); },
               {path.string(), "'w'", "unsupported dtype F8_E5M2"});
}

TEST_F(LoaderTest, TruncatedData) {
  // The header promises 64 bytes; the file holds 16.
  const auto path = write_raw(R"({"w":{"dtype":"F32","shape":[4,4],"data_offsets":[0,64]}})", 16);
  expect_error([&] { SafetensorsFile f(path); }, {path.string(), "'w'", "truncated"});
}

TEST_F(LoaderTest, OffsetsDisagreeWithShape) {
  const auto path = write_raw(R"({"w":{"dtype":"BF16","shape":[4],"data_offsets":[0,16]}})", 16);
  expect_error([&] { SafetensorsFile f(path); }, {"'w'", "span 16 bytes", "need 8"});
}

TEST_F(LoaderTest, ReversedOffsets) {
  const auto path = write_raw(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 16);
  expect_error([&] { SafetensorsFile f(path); }, {"'w'", "reversed"});
}

TEST_F(LoaderTest, OverlappingTensors) {
  const auto path = write_raw(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                              R"("b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
                              24);
  expect_error([&] { SafetensorsFile f(path); }, {path.string(), "'a' and 'b' overlap"});
}

// A shape whose element count overflows 64 bits wrapped to a byte size that
// matched its offsets.
TEST_F(LoaderTest, ShapeWithMoreElementsThanTheFileHasBytes) {
  const auto path = write_raw(
      R"({"w":{"dtype":"BF16","shape":[2147483648,4294967296],"data_offsets":[0,0]}})", 0);
  expect_error([&] { SafetensorsFile f(path); }, {"'w'", "more elements than the file has bytes"});
}

// The format does not require a tensor's bytes to be aligned to its element
// size (an odd-length bf16 tensor shifts every later f32 one); such a tensor
// is copied to aligned memory. An empty tensor may share another's offset.
TEST_F(LoaderTest, MisalignedAndEmptyTensors) {
  std::string header = R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[1,17]},)"
                       R"("e":{"dtype":"F32","shape":[0],"data_offsets":[1,1]}})";
  while ((8 + header.size() + 1) % 4 != 1) header += ' ';  // a's data at 1 mod 4
  const auto path = write_raw(header, 17);
  const SafetensorsFile file(path);
  const Tensor& a = file.tensors().at("a");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data) % alignof(float), 0u);
  float expected = 0;
  const uint32_t bits = 0x01010101;  // write_raw fills the data with 0x01 bytes
  std::memcpy(&expected, &bits, sizeof expected);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a.as<float>()[i], expected);
  EXPECT_EQ(file.tensors().at("e").numel(), 0);
}

TEST_F(LoaderTest, NegativeShape) {
  const auto path = write_raw(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", 0);
  expect_error([&] { SafetensorsFile f(path); }, {"'a'", "non-negative"});
}

TEST_F(LoaderTest, MissingTensor) {
  copy_model("qwen3");
  SafetensorsFile original(kModels / "qwen3" / "model.safetensors");
  auto tensors = original.tensors();
  tensors.erase("model.layers.1.self_attn.k_norm.weight");
  write_safetensors(dir / "model.safetensors.tmp", tensors);
  fs::rename(dir / "model.safetensors.tmp", dir / "model.safetensors");
  expect_error([&] { Model m(dir, cpu); },
               {dir.string(), "missing tensor 'model.layers.1.self_attn.k_norm.weight'"});
}

TEST_F(LoaderTest, WrongShape) {
  copy_model("llama");
  auto config = read_config();
  config["intermediate_size"] = 96;  // the checkpoint has 128
  write_config(config);
  expect_error([&] { Model m(dir, cpu); },
               {"model.layers.0.mlp.gate_proj.weight", "[128, 64] bf16", "expected [96, 64]"});
}

TEST_F(LoaderTest, WeightWithIntegerDtype) {
  copy_model("qwen3");
  SafetensorsFile original(kModels / "qwen3" / "model.safetensors");
  auto tensors = original.tensors();
  std::vector<int32_t> ints(64);
  tensors["model.norm.weight"] = Tensor::view(ints.data(), DType::i32, {64});
  write_safetensors(dir / "model.safetensors.tmp", tensors);
  fs::rename(dir / "model.safetensors.tmp", dir / "model.safetensors");
  expect_error([&] { Model m(dir, cpu); },
               {"'model.norm.weight'", "dtype i32", "f32, f16 or bf16"});
}

TEST_F(LoaderTest, ShardIndexNamesAMissingTensor) {
  copy_model("qwen2");
  auto index = json::parse(std::ifstream(dir / "model.safetensors.index.json"));
  index["weight_map"]["model.extra.weight"] = "model-00001-of-00009.safetensors";
  std::ofstream(dir / "model.safetensors.index.json") << index.dump();
  expect_error([&] { Model m(dir, cpu); },
               {"index.json", "'model.extra.weight'", "does not contain it"});
}

TEST_F(LoaderTest, ShardIndexEscapesTheDirectory) {
  copy_model("qwen2");
  auto index = json::parse(std::ifstream(dir / "model.safetensors.index.json"));
  index["weight_map"]["model.norm.weight"] = "../elsewhere.safetensors";
  std::ofstream(dir / "model.safetensors.index.json") << index.dump();
  expect_error([&] { Model m(dir, cpu); },
               {"'../elsewhere.safetensors'", "inside the model directory"});
}

TEST_F(LoaderTest, NoWeightsAtAll) {
  copy_model("llama");
  fs::remove(dir / "model.safetensors");
  expect_error([&] { Model m(dir, cpu); }, {"no model.safetensors"});
}

TEST_F(LoaderTest, UnsupportedArchitecture) {
  copy_model("llama");
  auto config = read_config();
  config["architectures"] = {"GPTNeoXForCausalLM"};
  write_config(config);
  expect_error([&] { Model m(dir, cpu); },
               {"config.json", "'GPTNeoXForCausalLM' is not supported", "LlamaForCausalLM"});
}

TEST_F(LoaderTest, ConfigIsNotJson) {
  copy_model("llama");
  std::ofstream(dir / "config.json") << "{\"vocab_size\": ";
  expect_error([&] { Model m(dir, cpu); }, {"config.json", "not valid JSON"});
}

// generation_config.json may name more end-of-sequence ids than config.json
// (an instruct model's end-of-turn token): generation stops at all of them.
TEST_F(LoaderTest, GenerationConfigAddsEndOfSequenceIds) {
  copy_model("qwen3");
  const std::vector<int64_t> from_config = load_model_config(dir).eos_token_ids;
  ASSERT_FALSE(from_config.empty());
  std::ofstream(dir / "generation_config.json")
      << json{{"eos_token_id", {from_config[0], 7}}}.dump();
  std::vector<int64_t> expected = from_config;
  expected.push_back(7);
  EXPECT_EQ(load_model_config(dir).eos_token_ids, expected);
  std::ofstream(dir / "generation_config.json") << json{{"eos_token_id", 1 << 30}}.dump();
  expect_error([&] { load_model_config(dir); },
               {"generation_config.json", "eos_token_id 1073741824 is not a token id"});
  std::ofstream(dir / "generation_config.json") << "{\"eos_token_id\": ";
  expect_error([&] { load_model_config(dir); }, {"generation_config.json", "not valid JSON"});
  std::ofstream(dir / "generation_config.json") << json{{"eos_token_id", "x"}}.dump();
  expect_error([&] { load_model_config(dir); },
               {"generation_config.json", "'eos_token_id' must be an integer"});
}

// generation_config.json's sampling keys are the defaults of requests that
// leave them unset; keys it lacks keep Hive's; "do_sample": false is greedy.
TEST_F(LoaderTest, GenerationConfigGivesSamplingDefaults) {
  copy_model("qwen3");
  std::ofstream(dir / "generation_config.json") << json{
      {"do_sample", true},
      {"temperature", 0.6},
      {"top_k", 20},
      {"top_p", 0.95},
      {"max_new_tokens", 40}}.dump();
  const GenerationDefaults g = load_model_config(dir).generation;
  EXPECT_EQ(g.max_tokens_or(16), 40);
  const SamplingParams p = g.sampling();
  EXPECT_FLOAT_EQ(p.temperature, 0.6f);
  EXPECT_EQ(p.top_k, 20);
  EXPECT_FLOAT_EQ(p.top_p, 0.95f);
  EXPECT_FALSE(p.seed);

  std::ofstream(dir / "generation_config.json") << json{{"top_p", 0.5}}.dump();
  const SamplingParams only_top_p = load_model_config(dir).generation.sampling();
  EXPECT_EQ(only_top_p.temperature, SamplingParams{}.temperature);
  EXPECT_EQ(only_top_p.top_k, SamplingParams{}.top_k);
  EXPECT_FLOAT_EQ(only_top_p.top_p, 0.5f);
  EXPECT_EQ(load_model_config(dir).generation.max_tokens_or(16), 16);

  std::ofstream(dir / "generation_config.json")
      << json{{"do_sample", false}, {"temperature", 0.7}}.dump();
  EXPECT_EQ(load_model_config(dir).generation.sampling().temperature, 0.0f);

  // repetition_penalty and min_p apply (greedy too, as in HF); keys Hive
  // does not apply are named when their value would change sampling.
  std::ofstream(dir / "generation_config.json") << json{
      {"do_sample", false},
      {"repetition_penalty", 1.25},
      {"min_p", 0.05},
      {"num_beams", 1},
      {"typical_p", 0.9}}.dump();
  const GenerationDefaults penalised = load_model_config(dir).generation;
  EXPECT_EQ(penalised.ignored, (std::vector<std::string>{"typical_p"}));
  EXPECT_EQ(penalised.sampling().repetition_penalty, 1.25f);
  EXPECT_EQ(penalised.sampling().min_p, 0.05f);
  EXPECT_EQ(penalised.sampling().temperature, 0.0f);
  std::ofstream(dir / "generation_config.json") << json{{"min_p", nullptr}}.dump();
  EXPECT_EQ(load_model_config(dir).generation.sampling().min_p, 0.0f);
  EXPECT_EQ(load_model_config(dir).generation.sampling().repetition_penalty, 1.0f);

  fs::remove(dir / "generation_config.json");
  EXPECT_EQ(load_model_config(dir).generation.sampling().temperature, 0.0f);
  EXPECT_EQ(load_model_config(dir).generation.max_tokens_or(7), 7);

  for (const auto& [bad, message] :
       {std::pair{json{{"temperature", -1}}, "'temperature' must be >= 0 (got -1)"},
        std::pair{json{{"temperature", "hot"}}, "'temperature' must be a number"},
        std::pair{json{{"top_k", 1.5}}, "'top_k' must be an integer"},
        std::pair{json{{"top_k", -2}}, "'top_k' must be in [0, 2147483647] (got -2)"},
        std::pair{json{{"top_p", 0}}, "'top_p' must be in (0, 1] (got 0)"},
        std::pair{json{{"min_p", 1.5}}, "'min_p' must be in [0, 1] (got 1.5)"},
        std::pair{json{{"repetition_penalty", 0}}, "'repetition_penalty' must be > 0 (got 0)"},
        std::pair{json{{"max_new_tokens", 0}}, "'max_new_tokens' must be in [1, 2147483647]"},
        std::pair{json{{"do_sample", 1}}, "'do_sample' must be true or false"}}) {
    std::ofstream(dir / "generation_config.json") << bad.dump();
    expect_error([&] { load_model_config(dir); }, {"generation_config.json", message});
  }
  // The bundled model's file asks for greedy decoding and 128 new tokens.
  const GenerationDefaults bundled =
      load_model_config(fs::path(HIVE_SOURCE_DIR) / "models/hive-moe-target").generation;
  EXPECT_EQ(bundled.sampling().temperature, 0.0f);
  EXPECT_EQ(bundled.max_tokens_or(16), 128);
}

// Keys a config may leave out take transformers 5.24's defaults for the
// architecture, not one of our own.
TEST_F(LoaderTest, AbsentKeysTakeTransformersDefaults) {
  const auto with = [&](const char* model, const std::function<void(json&)>& edit) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    copy_model(model);
    json config = read_config();
    edit(config);
    write_config(config);
    return load_model_config(dir);
  };
  EXPECT_EQ(with("qwen3", [](json& c) { c.erase("head_dim"); }).head_dim, 128);
  EXPECT_EQ(with("mistral", [](json& c) { c.erase("sliding_window"); }).sliding_window, 4096);
  EXPECT_EQ(with("mistral", [](json& c) { c["sliding_window"] = nullptr; }).sliding_window, 0);
  EXPECT_EQ(with("mixtral", [](json& c) { c.erase("sliding_window"); }).sliding_window, 0);
  EXPECT_EQ(with("qwen2_moe", [](json& c) { c.erase("shared_expert_intermediate_size"); })
                .shared_expert_intermediate_size,
            5632);
  // Given both, transformers 5 takes the 4.x rope_scaling first.
  const ModelConfig both = with("llama", [](json& c) {
    c["rope_parameters"] = json{{"rope_type", "default"}, {"rope_theta", 10000.0}};
    c["rope_scaling"] = json{{"rope_type", "linear"}, {"factor", 2.0}};
  });
  EXPECT_EQ(both.rope.type, "linear");
  EXPECT_EQ(both.rope.factor, 2.0);
}

struct BadValue {
  const char* model;
  const char* key;
  json value;
  const char* message;
};

class ConfigValueTest : public LoaderTest, public ::testing::WithParamInterface<BadValue> {};

TEST_P(ConfigValueTest, OutOfRangeValuesAreRejected) {
  const BadValue& bad = GetParam();
  copy_model(bad.model);
  auto config = read_config();
  if (bad.value.is_null())
    config.erase(bad.key);
  else
    config[bad.key] = bad.value;
  write_config(config);
  expect_error([&] { Model m(dir, cpu); }, {"config.json", bad.message});
}

INSTANTIATE_TEST_SUITE_P(
    Values, ConfigValueTest,
    ::testing::Values(
        BadValue{"llama", "hidden_size", 0, "hidden_size must be >= 1 (got 0)"},
        BadValue{"llama", "num_hidden_layers", -2, "num_hidden_layers must be >= 1 (got -2)"},
        BadValue{"llama", "num_key_value_heads", 3, "num_key_value_heads must divide"},
        BadValue{"llama", "vocab_size", nullptr, "missing required key 'vocab_size'"},
        BadValue{"llama", "vocab_size", "512", "'vocab_size' must be an integer"},
        BadValue{"llama", "head_dim", 15, "head_dim must be even"},
        BadValue{"llama", "rms_norm_eps", 0, "rms_norm_eps must be in (0, 1)"},
        BadValue{"llama", "hidden_act", "gelu", "hidden_act 'gelu' is not supported"},
        BadValue{"llama", "rope_parameters", json{{"rope_type", "longrope"}, {"rope_theta", 10000}},
                 "rope type 'longrope' is not supported"},
        BadValue{"deepseek_v3", "topk_group", 3, "topk_group must be in [1, 2] (got 3)"},
        BadValue{"deepseek_v3", "n_group", 3, "n_group must divide n_routed_experts"},
        BadValue{"deepseek_v3", "num_experts_per_tok", 5, "num_experts_per_tok must be in [1, 4]"},
        BadValue{"deepseek_v3", "kv_lora_rank", 31,
                 "kv_lora_rank and qk_rope_head_dim must be even"},
        BadValue{"deepseek_v3", "first_k_dense_replace", 4,
                 "first_k_dense_replace must be in [0, 3]"},
        BadValue{"deepseek_v3", "scoring_func", "softmax",
                 "scoring_func 'softmax' is not supported"},
        BadValue{"deepseek_v3", "moe_layer_freq", 2, "moe_layer_freq 2 is not supported"},
        BadValue{"deepseek_v2", "topk_method", "noaux_tc",
                 "topk_method 'noaux_tc' is not supported for DeepseekV2ForCausalLM"},
        BadValue{"deepseek_v2", "scoring_func", "sigmoid",
                 "scoring_func 'sigmoid' is not supported"},
        BadValue{"deepseek_v2", "norm_topk_prob", true, "norm_topk_prob true is not supported"},
        BadValue{"deepseek_v2", "n_group", nullptr, "missing required key 'n_group'"},
        BadValue{"deepseek_v2", "n_group", 5, "n_group must divide n_routed_experts"},
        BadValue{"deepseek_v2", "topk_group", 5, "topk_group must be in [1, 4] (got 5)"},
        BadValue{"deepseek_v2", "num_experts_per_tok", 7, "num_experts_per_tok must be in [1, 6]"},
        BadValue{"deepseek_v2_lite", "num_experts_per_tok", 9,
                 "num_experts_per_tok must be in [1, 8]"},
        BadValue{"deepseek_v2_lite", "rope_interleave", false,
                 "rope_interleave false is not supported"},
        BadValue{"qwen3", "rope_parameters", json{{"rope_type", "default"}, {"rope_theta", -1}},
                 "rope_theta must be > 0"},
        BadValue{"mixtral", "num_experts_per_tok", 5,
                 "num_experts_per_tok must be in [1, num_experts=4]"},
        BadValue{"qwen3_moe", "mlp_only_layers", json::array({7}), "mlp_only_layers entry 7"},
        BadValue{"qwen3_moe", "moe_intermediate_size", 0, "moe_intermediate_size must be >= 1"},
        BadValue{"qwen2", "use_sliding_window", true, "use_sliding_window is not supported"},
        BadValue{"mistral", "sliding_window", -4,
                 "sliding_window must be in [0, 2147483647] (got -4)"},
        // Integers must be integral, positive and within bounds, even where
        // unused (qwen2_moe's every layer is MoE: intermediate_size is not read).
        BadValue{"qwen2_moe", "intermediate_size", -1, "intermediate_size must be >= 1 (got -1)"},
        BadValue{"llama", "max_position_embeddings", 1000000000000LL,
                 "max_position_embeddings must be <= 2147483647 (got 1000000000000)"},
        BadValue{"llama", "num_hidden_layers", 1e9,
                 "num_hidden_layers must be <= 1048576 (got 1000000000)"},
        BadValue{"llama", "hidden_size", 64.5, "'hidden_size' must be an integer (got 64.5)"},
        BadValue{"llama", "vocab_size", 18446744073709551615ULL,
                 "'vocab_size' must be an integer (got 18446744073709551615)"},
        BadValue{"llama", "eos_token_id", 4294967298LL,
                 "eos_token_id 4294967298 is not a token id"},
        BadValue{"llama", "eos_token_id", json::array({2, -7}),
                 "eos_token_id -7 is not a token id"}),
    [](const auto& param_info) {
      return std::string(param_info.param.model) + "_" + param_info.param.key + "_" +
             std::to_string(param_info.index);
    });

}  // namespace
}  // namespace hive
