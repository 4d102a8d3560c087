// hive run --config FILE --prompts FILE: a batch through the actor runtime.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "kernels/cpu/cpu_backend.hpp"
#include "runtime/model/kv_budget.hpp"
#include "runtime/engine/llm_engine.hpp"
#include "tests/common/nan_model.hpp"
#include "tests/common/run_command.hpp"

namespace hive {
namespace {

using test::run_command;
using Result = test::CommandResult;

// hive run with dir/run.yaml and dir/prompts.jsonl.
Result hive_run(const std::filesystem::path& dir, bool with_stderr = true) {
  return run_command(test::hive_binary() + " run --config " + (dir / "run.yaml").string() +
                         " --prompts " + (dir / "prompts.jsonl").string(),
                     with_stderr);
}

std::string join(const std::vector<int32_t>& ids) {
  std::string text;
  for (const int32_t id : ids) text += " " + std::to_string(id);
  return text;
}

// Runs two prompts under a launch file with `extra` YAML and checks the
// outputs against the offline single-rank engine, both with the KV cache as
// kv_dtype (kv_cache.dtype's spelling); returns the CLI's output.
std::string expect_runs_like_offline(const std::string& name, const std::string& extra,
                                     const std::string& kv_dtype = "bf16") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / name;
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "run.yaml") << "model: " << HIVE_TEST_DATA << "/models/qwen3_moe\n"
                                  << "device: cpu\nkv_cache: {block_size: 4, memory_budget: 1MiB, "
                                  << "dtype: " << kv_dtype << "}\n"
                                  << extra;
  std::ofstream(dir / "prompts.jsonl")
      << R"({"id": "a", "prompt_ids": [5, 9, 13, 2], "max_tokens": 6, "ignore_eos": true})"
      << "\n"
      << R"({"id": "b", "prompt_ids": [8, 1], "max_tokens": 3, "ignore_eos": true})"
      << "\n";
  const Result r = hive_run(dir);
  EXPECT_EQ(r.status, 0) << r.out;

  CpuBackend cpu;
  Model model(std::string(HIVE_TEST_DATA) + "/models/qwen3_moe", cpu);
  EngineConfig config;
  config.block_size = 4;
  config.kv_budget = KVBudget{int64_t{1} << 20, 0.0};
  config.kv_cache_dtype = parse_kv_cache_dtype(kv_dtype, "kv_dtype");
  for (const auto& [id, prompt, max_tokens] :
       {std::tuple<std::string, std::vector<int32_t>, int>{"a", {5, 9, 13, 2}, 6},
        std::tuple<std::string, std::vector<int32_t>, int>{"b", {8, 1}, 3}}) {
    Request request;
    request.id = id;
    request.prompt_token_ids = prompt;
    request.stop.max_tokens = max_tokens;
    request.stop.ignore_eos = true;
    LLMEngine engine(model, config);
    const std::vector<int32_t> expected = engine.generate({request}).at(0).samples.at(0).token_ids;
    EXPECT_NE(r.out.find(id + ":" + join(expected) + "  [length]"), std::string::npos) << r.out;
  }
  EXPECT_NE(r.out.find("requests: 2 finished, 0 failed; 9 tokens"), std::string::npos) << r.out;
  return r.out;
}

// It also says how it computes: ctest runs it in the exact mode.
TEST(CliRun, RunsPromptsFromAYamlLaunchFile) {
  const std::string out = expect_runs_like_offline("hive_cli_run", "");
  EXPECT_NE(out.find("hive run: matmul precision f32 (exact), CPU kernel path "),
            std::string::npos)
      << out;
}

// int8 and fp8 KV (kv_cache.dtype) reach the worker ranks: the actor
// runtime gives the offline engine's tokens with the same cache dtype.
TEST(CliRun, RunsWithAQuantizedKVCacheFromTheLaunchFile) {
  for (const char* dtype : {"int8", "fp8"}) {
    SCOPED_TRACE(dtype);
    expect_runs_like_offline(std::string("hive_cli_run_kv_") + dtype, "", dtype);
  }
}

// As configs/ep_cpu4.yaml, on the fixture: 4 data-parallel ranks, experts
// spread round-robin, the hottest one replicated.
TEST(CliRun, RunsWithSpeculationFromTheLaunchFile) {
  for (const std::string& spec :
       {std::string("speculative: {method: ngram, num_speculative_tokens: 3, adaptive: false}\n"),
        std::string("speculative: {draft_model: ") + HIVE_TEST_DATA +
            "/models/qwen3_moe, num_speculative_tokens: 2, adaptive: false}\n"}) {
    const std::string out = expect_runs_like_offline("hive_cli_run_spec", spec);
    // The fixture drafting for itself always has drafts; n-gram lookup
    // may find none in these short sequences.
    if (spec.find("draft_model") != std::string::npos) {
      EXPECT_NE(out.find("speculation: "), std::string::npos) << out;
    }
  }
}

TEST(CliRun, RunsExpertParallelOverFourRanks) {
  const std::string out = expect_runs_like_offline(
      "hive_cli_run_ep",
      "parallel: {world_size: 4, expert_parallel_size: 4, tensor_parallel_size: 1,\n"
      "           expert_placement: round_robin, replicate_hot_experts: 1}\n");
  EXPECT_NE(out.find("experts: 4 ranks"), std::string::npos) << out;
}

// Live balancing from the launch file, at its most eager: the placement
// switches while the prompts run and the tokens stay the offline engine's.
TEST(CliRun, RebalancesExpertsLiveOverFourRanks) {
  const std::string out = expect_runs_like_offline(
      "hive_cli_run_eplb",
      "parallel: {world_size: 4, rebalance_period_steps: 1, rebalance_window_steps: 2,\n"
      "           replica_slots_per_rank: 2, rebalance_threshold: 1.0}\n");
  EXPECT_NE(out.find("live balancing switched placement"), std::string::npos) << out;
}

// As configs/tp_cpu2.yaml, on the fixture: one model split over 2 ranks.
TEST(CliRun, RunsTensorParallelOverTwoRanks) {
  const std::string out = expect_runs_like_offline(
      "hive_cli_run_tp",
      "parallel: {world_size: 2, expert_parallel_size: 1, tensor_parallel_size: 2}\n");
  EXPECT_NE(out.find("tensor parallel: 2 ranks"), std::string::npos) << out;
}

// Expert parallelism over more ranks than experts is refused before any
// worker starts (it used to fail every worker's start three times over).
TEST(CliRun, MoreExpertParallelRanksThanExpertsAreRefusedUpFront) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "hive_cli_run_ep16";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "run.yaml") << "model: " << HIVE_TEST_DATA << "/models/qwen3_moe\n"
                                  << "device: cpu\nkv_cache: {block_size: 4, memory_budget: 1MiB}\n"
                                  << "parallel: {world_size: 16, expert_parallel_size: 16}\n";
  std::ofstream(dir / "prompts.jsonl") << R"({"id": "a", "prompt_ids": [5, 9, 13, 2]})" << "\n";
  const Result r = hive_run(dir);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("expert parallelism over 16 ranks needs at least as many experts; the "
                       "model has 8"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("a:  ["), std::string::npos) << r.out;  // no request ran
  std::filesystem::remove_all(dir);
}

// Failed requests are counted in the summary, from the events hive run
// printed (the engine's metrics leave out requests refused at submission,
// and the summary said "0 finished, 0 failed" with exit 1). Here no token
// can be sampled: the checkpoint's logits are all NaN.
TEST(CliRun, TheSummaryCountsAbortedRequests) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "hive_cli_run_abort";
  std::filesystem::create_directories(dir);
  test::write_nan_model(std::filesystem::path(HIVE_TEST_DATA) / "models/qwen3_moe", dir / "model");
  std::ofstream(dir / "run.yaml") << "model: " << (dir / "model").string() << "\n"
                                  << "device: cpu\nkv_cache: {block_size: 4, memory_budget: 1MiB}\n";
  std::ofstream(dir / "prompts.jsonl") << R"({"id": "a", "prompt_ids": [5, 9, 13, 2]})"
                                       << "\n"
                                       << R"({"id": "b", "prompt_ids": [8, 1]})"
                                       << "\n";
  const Result r = hive_run(dir);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("a:  [aborted: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("b:  [aborted: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("requests: 0 finished, 2 failed;"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

// Outputs that cannot be written (a full disk) are an error with exit 1.
TEST(CliRun, AFailedWriteIsAnError) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "hive_cli_run_full";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "run.yaml") << "model: " << HIVE_TEST_DATA << "/models/qwen3_moe\n"
                                  << "device: cpu\n";
  std::ofstream(dir / "prompts.jsonl") << R"({"id": "a", "prompt_ids": [5, 9], "max_tokens": 2})"
                                       << "\n";
  // stderr to the pipe first, then stdout to the full device.
  const Result r =
      run_command("(" + test::hive_binary() + " run --config " + (dir / "run.yaml").string() +
                      " --prompts " + (dir / "prompts.jsonl").string() + " 2>&1 >/dev/full)",
                  false);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(
      r.out.find("hive run: error: cannot write the output to stdout: No space left on device"),
      std::string::npos)
      << r.out;
  std::filesystem::remove_all(dir);
}

// Text prompts on the bundled model: the output is the text transformers
// continues "Once upon a time" with (tests/models/data/expected.json).
TEST(CliRun, TextPromptsPrintText) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "hive_cli_run_text";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "run.yaml") << "model: " << HIVE_SOURCE_DIR << "/models/hive-moe-target\n";
  std::ofstream(dir / "prompts.jsonl")
      << R"({"id": "story", "prompt": "Once upon a time", "max_tokens": 24, "ignore_eos": true})"
      << "\n"
      << R"({"id": "chat", "prompt": "Tell me a fortune.", "chat": true, "max_tokens": 8})"
      << "\n";
  const Result r = hive_run(dir, false);
  ASSERT_EQ(r.status, 0) << r.out;
  std::ifstream in(std::string(HIVE_SOURCE_DIR) + "/tests/models/data/expected.json");
  const std::string want = nlohmann::json::parse(in)["plain_prompt"]["greedy_text"];
  EXPECT_NE(r.out.find("story: " + nlohmann::json(want).dump() + "  [length]"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("chat: \""), std::string::npos) << r.out;
}

// A "stop" key ends a text prompt's output before the first stop string;
// on an id prompt it is an error naming the line.
TEST(CliRun, TextPromptsStopAtAStopString) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "hive_cli_run_stop";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "run.yaml") << "model: " << HIVE_SOURCE_DIR << "/models/hive-moe-target\n";
  std::ofstream(dir / "prompts.jsonl")
      << R"({"id": "story", "prompt": "Once upon a time", "max_tokens": 24, "ignore_eos": true,)"
      << R"( "stop": ["LORD", "not in it"]})"
      << "\n";
  const Result r = hive_run(dir, false);
  ASSERT_EQ(r.status, 0) << r.out;
  std::ifstream in(std::string(HIVE_SOURCE_DIR) + "/tests/models/data/expected.json");
  const std::string want = nlohmann::json::parse(in)["plain_prompt"]["greedy_text"];
  const std::string cut = want.substr(0, want.find("LORD"));
  EXPECT_NE(r.out.find("story: " + nlohmann::json(cut).dump() + "  [stop_string]"),
            std::string::npos)
      << r.out;

  std::ofstream(dir / "prompts.jsonl") << R"({"prompt_ids": [1, 2], "stop": ["x"]})" << "\n";
  const Result ids = hive_run(dir);
  EXPECT_NE(ids.status, 0);
  EXPECT_NE(ids.out.find("prompts.jsonl:1: \"stop\" applies to a text \"prompt\""),
            std::string::npos)
      << ids.out;
}

// Keys a prompt line leaves out take the checkpoint's generation_config.json
// values (here max_new_tokens 4 and sampling at temperature 1.5, top-k 50);
// keys it gives win.
TEST(CliRun, PromptsTakeTheCheckpointsGenerationDefaults) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "hive_cli_run_generation";
  const fs::path model_dir = dir / "model";
  fs::create_directories(model_dir);
  const fs::path fixture = fs::path(HIVE_TEST_DATA) / "models/qwen3_moe";
  for (const auto& entry : fs::directory_iterator(fixture))
    fs::copy_file(entry.path(), model_dir / entry.path().filename(),
                  fs::copy_options::overwrite_existing);
  std::ofstream(model_dir / "generation_config.json")
      << nlohmann::json{{"temperature", 1.5}, {"top_k", 50}, {"max_new_tokens", 4}}.dump();
  std::ofstream(dir / "run.yaml")
      << "model: " << model_dir.string()
      << "\ndevice: cpu\nkv_cache: {block_size: 4, memory_budget: 1MiB}\n";
  std::ofstream(dir / "prompts.jsonl")
      << R"({"id": "a", "prompt_ids": [5, 9, 13, 2], "ignore_eos": true, "seed": 3})"
      << "\n"
      << R"({"id": "b", "prompt_ids": [8, 1], "max_tokens": 2, "temperature": 0, "ignore_eos": true})"
      << "\n";
  const Result r = hive_run(dir);
  ASSERT_EQ(r.status, 0) << r.out;

  CpuBackend cpu;
  Model model(fixture, cpu);
  EngineConfig config;
  config.block_size = 4;
  config.kv_budget = KVBudget{int64_t{1} << 20, 0.0};
  Request a;
  a.id = "a";
  a.prompt_token_ids = {5, 9, 13, 2};
  a.stop.max_tokens = 4;
  a.stop.ignore_eos = true;
  a.sampling = SamplingParams{1.5f, 50, 1.0f, 3};
  Request b;
  b.id = "b";
  b.prompt_token_ids = {8, 1};
  b.stop.max_tokens = 2;
  b.stop.ignore_eos = true;
  for (const Request& request : {a, b}) {
    LLMEngine engine(model, config);
    const std::vector<int32_t> expected = engine.generate({request}).at(0).samples.at(0).token_ids;
    ASSERT_EQ(expected.size(), static_cast<size_t>(request.stop.max_tokens));
    EXPECT_NE(r.out.find(request.id + ":" + join(expected) + "  [length]"), std::string::npos)
        << r.out;
  }
  // A default longer than a rank's KV pool holds (4 KiB: 16 blocks of 4
  // tokens of bf16 KV, the null block included, on this fixture) is cut to fit it: 60
  // tokens, less the prompt.
  std::ofstream(model_dir / "generation_config.json")
      << nlohmann::json{{"max_new_tokens", 100000}}.dump();
  std::ofstream(dir / "run.yaml") << "model: " << model_dir.string()
                                  << "\ndevice: cpu\nkv_cache: {block_size: 4, memory_budget: "
                                  << kv_bytes_per_block(model.config(), 4, DType::bf16) * 16
                                  << "}\n";
  std::ofstream(dir / "prompts.jsonl")
      << R"({"id": "a", "prompt_ids": [5, 9, 13, 2], "ignore_eos": true})"
      << "\n";
  const Result cut = hive_run(dir);
  ASSERT_EQ(cut.status, 0) << cut.out;
  EXPECT_NE(cut.out.find("56 tokens in"), std::string::npos) << cut.out;
  EXPECT_NE(cut.out.find("[length]"), std::string::npos) << cut.out;
  // A prompt that fills the context is an error naming the line.
  std::string context_ids = "1";
  for (int i = 1; i < model.config().max_position_embeddings; ++i) context_ids += ", 1";
  std::ofstream(dir / "prompts.jsonl") << R"({"prompt_ids": [)" << context_ids << "]}\n";
  const Result full = hive_run(dir);
  EXPECT_EQ(full.status, 1);
  EXPECT_NE(full.out.find("prompts.jsonl:1: the prompt (256 tokens) leaves no room in the model's "
                          "context of 256 tokens"),
            std::string::npos)
      << full.out;
  fs::remove_all(dir);
}

// The sampling keys reach the engine: a penalised prompt runs as the
// offline engine runs the same request, and "logprobs" prints its line.
TEST(CliRun, PromptsTakePenaltiesMinPAndLogprobs) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "hive_cli_run_pen";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "run.yaml")
      << "model: " << HIVE_TEST_DATA << "/models/qwen3_moe\n"
      << "device: cpu\nkv_cache: {block_size: 4, memory_budget: 1MiB}\n";
  std::ofstream(dir / "prompts.jsonl")
      << R"({"id": "p", "prompt_ids": [5, 9, 13, 2], "max_tokens": 8, "ignore_eos": true, )"
      << R"("temperature": 0.8, "seed": 3, "min_p": 0.1, "presence_penalty": 0.5, )"
      << R"("frequency_penalty": 0.5, "repetition_penalty": 1.5, "logprobs": 2})"
      << "\n";
  const Result r = hive_run(dir);
  ASSERT_EQ(r.status, 0) << r.out;
  CpuBackend cpu;
  Model model(std::string(HIVE_TEST_DATA) + "/models/qwen3_moe", cpu);
  EngineConfig config;
  config.block_size = 4;
  config.kv_budget = KVBudget{int64_t{1} << 20, 0.0};
  Request request;
  request.id = "p";
  request.prompt_token_ids = {5, 9, 13, 2};
  request.stop.max_tokens = 8;
  request.stop.ignore_eos = true;
  request.sampling = {0.8f, 0, 1.0f, uint64_t{3}};
  request.sampling.min_p = 0.1f;
  request.sampling.presence_penalty = request.sampling.frequency_penalty = 0.5f;
  request.sampling.repetition_penalty = 1.5f;
  const std::vector<int32_t> expected =
      LLMEngine(model, config).generate({request}).at(0).samples.at(0).token_ids;
  EXPECT_NE(r.out.find("p:" + join(expected) + "  [length]"), std::string::npos) << r.out;
  const size_t at = r.out.find(R"({"id":"p","logprobs":)");
  ASSERT_NE(at, std::string::npos) << r.out;
  const nlohmann::json line = nlohmann::json::parse(r.out.substr(at, r.out.find('\n', at) - at));
  ASSERT_EQ(line["logprobs"].size(), expected.size());
  for (size_t t = 0; t < expected.size(); ++t) {
    EXPECT_EQ(line["logprobs"][t]["token"], expected[t]);
    EXPECT_EQ(line["logprobs"][t]["top_logprobs"].size(), 2u);
  }
}

// A quantized GGUF widened at load: the launch file's dequantize: true and
// --dequantize run the offline engine's dequantized tokens with the same
// logprobs, which are not those of the file's blocks.
TEST(CliRun, DequantizeFromTheLaunchFileOrTheFlag) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "hive_cli_run_deq";
  std::filesystem::create_directories(dir);
  const std::string model = std::string(HIVE_TEST_DATA) + "/gguf/models/qwen3_moe-q8_0.gguf";
  const std::string launch =
      "model: " + model + "\ndevice: cpu\nkv_cache: {block_size: 4, memory_budget: 1MiB}\n";
  std::ofstream(dir / "prompts.jsonl")
      << R"({"id": "p", "prompt_ids": [5, 9, 13, 2], "max_tokens": 4, "ignore_eos": true, )"
      << R"("logprobs": 1})"
      << "\n";
  const auto logprobs_line = [](const Result& r) {
    const size_t at = r.out.find(R"({"id":"p","logprobs":)");
    return at == std::string::npos ? std::string() : r.out.substr(at, r.out.find('\n', at) - at);
  };
  std::ofstream(dir / "run.yaml") << launch << "dequantize: true\n";
  const Result from_file = hive_run(dir);
  ASSERT_EQ(from_file.status, 0) << from_file.out;
  std::ofstream(dir / "run.yaml") << launch;
  const Result quantized = hive_run(dir);
  ASSERT_EQ(quantized.status, 0) << quantized.out;
  const Result from_flag =
      run_command(test::hive_binary() + " run --dequantize --config " +
                  (dir / "run.yaml").string() + " --prompts " + (dir / "prompts.jsonl").string());
  ASSERT_EQ(from_flag.status, 0) << from_flag.out;

  CpuBackend cpu;
  Model dequantized(model, cpu, LoadOptions{.dequantize = true});
  EngineConfig config;
  config.block_size = 4;
  config.kv_budget = KVBudget{int64_t{1} << 20, 0.0};
  Request request;
  request.id = "p";
  request.prompt_token_ids = {5, 9, 13, 2};
  request.stop.max_tokens = 4;
  request.stop.ignore_eos = true;
  const std::vector<int32_t> expected =
      LLMEngine(dequantized, config).generate({request}).at(0).samples.at(0).token_ids;
  for (const Result* r : {&from_file, &from_flag})
    EXPECT_NE(r->out.find("p:" + join(expected) + "  [length]"), std::string::npos) << r->out;
  ASSERT_NE(logprobs_line(from_file), "") << from_file.out;
  EXPECT_EQ(logprobs_line(from_flag), logprobs_line(from_file));
  EXPECT_NE(logprobs_line(quantized), logprobs_line(from_file));
}

TEST(CliRun, ABadPromptLineNamesTheFileAndLine) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "hive_cli_run_bad";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "run.yaml") << "model: " << HIVE_TEST_DATA << "/models/qwen3_moe\n";
  std::ofstream(dir / "prompts.jsonl") << R"({"id": "a", "prompt_ids": [1]})"
                                       << "\n"
                                       << R"({"id": "b"})"
                                       << "\n";
  const Result r = hive_run(dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("prompts.jsonl:2: give \"prompt\" (text) or \"prompt_ids\""),
            std::string::npos)
      << r.out;
  // A text prompt for a model directory without a tokenizer says so.
  std::ofstream(dir / "prompts.jsonl") << R"({"id": "a", "prompt": "hello"})"
                                       << "\n";
  const Result text = hive_run(dir);
  EXPECT_EQ(text.status, 1);
  EXPECT_NE(text.out.find("tokenizer.json"), std::string::npos) << text.out;
  // Unknown keys, values of the wrong type or range, and a repeated id.
  struct Case {
    std::string line, message;
  };
  for (const Case& c : {
           Case{R"({"prompt_ids": [1], "max_token": 9})", ":1: unknown key \"max_token\""},
           Case{R"({"prompt_ids": [1, 2.9]})", ":1: \"prompt_ids\" holds 2.9, not a token id"},
           Case{R"({"prompt_ids": [4294967297]})", "holds 4294967297, not a token id"},
           Case{R"({"prompt_ids": [1], "max_tokens": 2.5})",
                "\"max_tokens\" must be an integer in [1, 2147483647] (got 2.5)"},
           Case{R"({"prompt_ids": [1], "temperature": true})",
                "\"temperature\" must be a number in [0, 1e+06] (got true)"},
           Case{R"({"prompt_ids": [1], "seed": -1})", "\"seed\" must be an integer in [0, "},
           Case{R"({"prompt_ids": [1], "top_p": 0})", ":1: top_p must be in (0, 1]"},
           Case{R"({"prompt_ids": [1], "min_p": 1.5})",
                ":1: \"min_p\" must be a number in [0, 1] (got 1.5)"},
           Case{R"({"prompt_ids": [1], "presence_penalty": 3})",
                ":1: \"presence_penalty\" must be a number in [-2, 2] (got 3)"},
           Case{R"({"prompt_ids": [1], "frequency_penalty": "a"})",
                ":1: \"frequency_penalty\" must be a number in [-2, 2]"},
           Case{R"({"prompt_ids": [1], "repetition_penalty": 0})",
                ":1: repetition_penalty must be > 0"},
           Case{R"({"prompt_ids": [1], "logprobs": 21})",
                ":1: \"logprobs\" must be an integer in [0, 20] (got 21)"},
           Case{R"([1, 2])", ":1: expected a JSON object"},
           Case{R"({"prompt_ids": [1], "seed": 1, "seed": 2})",
                ":1: key \"seed\" given twice in the object at the top level"},
           Case{R"({"prompt_ids": []})", ":1: the prompt has no tokens"},
           Case{R"({"id": "", "prompt_ids": [1]})", ":1: \"id\" must not be empty"},
           Case{R"({"prompt_ids": [1, 2000000000]})",
                ":1: prompt token id 2000000000 is out of range [0, "},
           Case{R"({"id": "x", "prompt_ids": [1]})"
                "\n"
                R"({"id": "x", "prompt_ids": [2]})",
                ":2: id 'x' is already used on line 1"},
       }) {
    std::ofstream(dir / "prompts.jsonl") << c.line << "\n";
    const Result bad = hive_run(dir);
    EXPECT_EQ(bad.status, 1) << c.line;
    EXPECT_NE(bad.out.find(c.message), std::string::npos) << c.line << "\n" << bad.out;
  }
}

}  // namespace
}  // namespace hive
