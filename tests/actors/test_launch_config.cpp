// The YAML launch file: the bundled configs parse, and every kind of mistake
// is reported with file:line, the key, what was expected and what was given.
#include <gtest/gtest.h>

#include <filesystem>

#include "actors/engine.hpp"
#include "actors/launch_config.hpp"
#include "base/error.hpp"

namespace hive {
namespace {

namespace fs = std::filesystem;
const fs::path kConfigs = fs::path(HIVE_TEST_DATA) / ".." / ".." / "configs";

LaunchConfig parse(const std::string& text) {
  return parse_launch_config(text, "test.yaml", "/base");
}

void expect_error(const std::string& text, const std::string& message) {
  try {
    parse(text);
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos)
        << "got: " << e.what() << "\nwanted: " << message;
  }
}

TEST(LaunchConfig, BundledConfigsParse) {
  const LaunchConfig cpu = load_launch_config(kConfigs / "cpu.yaml");
  EXPECT_EQ(cpu.model.filename(), "hive-moe-target");
  EXPECT_EQ(cpu.device, DeviceChoice::cpu);
  EXPECT_EQ(cpu.kv_cache.memory_budget_bytes, 256 * 1024 * 1024);
  EXPECT_EQ(cpu.scheduler.max_num_batched_tokens, 256);
  EXPECT_TRUE(cpu.scheduler.async_scheduling);
  EXPECT_FALSE(
      parse("model: m\nscheduler:\n  async_scheduling: false\n").scheduler.async_scheduling);
  const LaunchConfig ep = load_launch_config(kConfigs / "ep_cpu4.yaml");
  EXPECT_EQ(ep.parallel.world_size, 4);
  EXPECT_EQ(ep.parallel.expert_placement, PlacementKind::round_robin);
  EXPECT_EQ(ep.parallel.replicate_hot_experts, 1);
  EXPECT_EQ(ep.parallel.rebalance_experts.period_steps, 0);  // live balancing: off unless asked
  const LaunchConfig ep_live = load_launch_config(kConfigs / "ep_cpu4_live.yaml");
  EXPECT_EQ(ep_live.parallel.rebalance_experts.period_steps, 5);
  EXPECT_EQ(ep_live.parallel.rebalance_experts.window_steps, 10);
  const ParallelConfig live = parse(
                                  "model: m\nparallel: {world_size: 4, rebalance_period_steps: 8, "
                                  "rebalance_window_steps: 32,\n"
                                  "  replica_slots_per_rank: 2, rebalance_threshold: 1.1}\n")
                                  .parallel;
  EXPECT_EQ(live.rebalance_experts.period_steps, 8);
  EXPECT_EQ(live.rebalance_experts.window_steps, 32);
  EXPECT_EQ(live.rebalance_experts.slots_per_rank, 2);
  EXPECT_DOUBLE_EQ(live.rebalance_experts.threshold, 1.1);
  EXPECT_EQ(ep.parallel.transport, RankTransport::in_process);
  const LaunchConfig ep_mpi = load_launch_config(kConfigs / "ep_mpi4.yaml");
  EXPECT_EQ(ep_mpi.parallel.transport, RankTransport::mpi);
  EXPECT_EQ(ep_mpi.parallel.world_size, 4);
  EXPECT_EQ(engine_options(ep_mpi).transport, RankTransport::mpi);
  const LaunchConfig tp_mpi = load_launch_config(kConfigs / "tp_mpi2.yaml");
  EXPECT_EQ(tp_mpi.parallel.transport, RankTransport::mpi);
  EXPECT_EQ(tp_mpi.parallel.tensor_parallel_size, 2);
  const LaunchConfig spec = load_launch_config(kConfigs / "spec_cpu.yaml");
  EXPECT_EQ(spec.speculative.method, SpeculativeMethod::draft_model);
  EXPECT_EQ(spec.speculative.draft_model.filename(), "hive-draft");
  EXPECT_EQ(spec.speculative.num_speculative_tokens, 4);
  const LaunchConfig ngram =
      parse("model: m\nspeculative: {method: ngram, ngram: {min_n: 2, max_n: 4}}\n");
  EXPECT_EQ(ngram.speculative.method, SpeculativeMethod::ngram);
  EXPECT_EQ(ngram.speculative.ngram.min_n, 2);
  EXPECT_EQ(ngram.speculative.ngram.max_n, 4);
  EXPECT_EQ(ngram.speculative.num_speculative_tokens, 4);
}

TEST(LaunchConfig, NamedChoicesAreEnums) {
  const LaunchConfig c = parse(
      "model: m\ndevice: cpu\nscheduler: {policy: priority, preemption_mode: recompute}\n"
      "parallel: {world_size: 2, expert_placement: round_robin}\nkv_cache: {dtype: f32}\n");
  EXPECT_EQ(c.device, DeviceChoice::cpu);
  EXPECT_EQ(c.scheduler.policy, SchedulingPolicy::priority);
  EXPECT_EQ(c.scheduler.preemption_mode, PreemptionMode::recompute);
  EXPECT_EQ(c.parallel.expert_placement, PlacementKind::round_robin);
  EXPECT_EQ(c.kv_cache.dtype, DType::f32);
  const LaunchConfig d = parse("model: m\n");
  EXPECT_EQ(d.scheduler.policy, SchedulingPolicy::fcfs);
  EXPECT_EQ(d.scheduler.preemption_mode, PreemptionMode::by_cost);
  // The engine gets them as they are.
  const EngineOptions options = engine_options(c);
  EXPECT_EQ(options.device, DeviceChoice::cpu);
  EXPECT_EQ(options.engine.scheduler.policy, SchedulingPolicy::priority);
  EXPECT_EQ(options.engine.scheduler.preemption_mode, PreemptionMode::recompute);
  EXPECT_EQ(options.expert_placement, PlacementKind::round_robin);
  EXPECT_EQ(options.engine.kv_cache_dtype, DType::f32);
  // Unset leaves HIVE_MATMUL_PRECISION's; a bad name is refused.
  EXPECT_FALSE(d.matmul_precision.has_value());
  EXPECT_EQ(parse("model: m\nmatmul_precision: bf16\n").matmul_precision,
            cpu::MatmulPrecision::bf16);
  EXPECT_EQ(parse("model: m\nmatmul_precision: f32\n").matmul_precision,
            cpu::MatmulPrecision::f32);
  EXPECT_THROW(parse("model: m\nmatmul_precision: fp8\n"), Error);
  // dequantize: off unless asked for, a boolean, and it reaches the engine's load options.
  EXPECT_FALSE(d.dequantize);
  EXPECT_FALSE(engine_options(d).load.dequantize);
  const LaunchConfig widened = parse("model: m.gguf\ndequantize: true\n");
  EXPECT_TRUE(widened.dequantize);
  EXPECT_TRUE(engine_options(widened).load.dequantize);
  EXPECT_FALSE(parse("model: m\ndequantize: false\n").dequantize);
  expect_error("model: m\ndequantize: bf16\n", "dequantize: expected true or false (got 'bf16')");
  expect_error("model: m\nparallel: {world_size: 2, transport: tcp}\n",
               "transport: expected one of");
}

// transport: nccl needs CUDA (and MPI, its bootstrap) in the build; a build
// without them says so at parse time, before any process starts.
TEST(LaunchConfig, NcclTransportNeedsCudaAndMpiInTheBuild) {
#if defined(HIVE_HAVE_CUDA) && defined(HIVE_HAVE_MPI)
  const LaunchConfig ep_nccl = load_launch_config(kConfigs / "ep_nccl2.yaml");
  EXPECT_EQ(ep_nccl.parallel.transport, RankTransport::nccl);
  EXPECT_EQ(ep_nccl.parallel.world_size, 2);
  EXPECT_EQ(engine_options(ep_nccl).transport, RankTransport::nccl);
#elif defined(HIVE_HAVE_MPI)
  expect_error("model: m\nparallel: {world_size: 2, transport: nccl}\n",
               "nccl: this Hive was built without CUDA");
#else
  expect_error("model: m\nparallel: {world_size: 2, transport: nccl}\n",
               "nccl: this Hive was built without MPI");
#endif
}

TEST(LaunchConfig, DefaultsAndRelativePaths) {
  const LaunchConfig c = parse("model: models/m\n");
  EXPECT_EQ(c.model, fs::path("/base/models/m"));
  EXPECT_EQ(c.device, DeviceChoice::automatic);
  EXPECT_EQ(c.kv_cache.block_size, 16);
  EXPECT_FALSE(c.kv_cache.memory_budget_bytes.has_value());
  EXPECT_EQ(c.kv_cache.dtype, DType::bf16);
  EXPECT_EQ(parse("model: m\nkv_cache: {dtype: f32}\n").kv_cache.dtype, DType::f32);
  EXPECT_EQ(parse("model: m\nkv_cache: {dtype: int8}\n").kv_cache.dtype, DType::i8);
  EXPECT_EQ(parse("model: m\nkv_cache: {dtype: fp8}\n").kv_cache.dtype, DType::f8_e4m3);
  EXPECT_EQ(c.server.host, "127.0.0.1");
  EXPECT_EQ(c.speculative.method, SpeculativeMethod::none);
  EXPECT_EQ(parse("model: /abs/m\n").model, fs::path("/abs/m"));
}

TEST(LaunchConfig, ByteSizes) {
  EXPECT_EQ(parse_byte_size("512MiB"), 512 * 1024 * 1024);
  EXPECT_EQ(parse_byte_size("1.5GB"), 1500000000);
  EXPECT_EQ(parse_byte_size("4096"), 4096);
  EXPECT_FALSE(parse_byte_size("12 parsecs").has_value());
  EXPECT_FALSE(parse_byte_size("-1MiB").has_value());
  // Only decimal digits and one point: std::stod would also take these.
  for (const char* bad : {" 5MiB", "0x10MiB", "1e3", "inf", "nan", ".", "1.2.3", "+5", "5 MiB"})
    EXPECT_FALSE(parse_byte_size(bad).has_value()) << bad;
  EXPECT_EQ(parse_byte_size(".5KiB"), 512);
  // Past int64_t: refused, not undefined behaviour.
  EXPECT_FALSE(parse_byte_size("1e19").has_value());
  EXPECT_FALSE(parse_byte_size("9223372036854775808").has_value());
  EXPECT_FALSE(parse_byte_size("10000000000GiB").has_value());
  EXPECT_FALSE(parse_byte_size(std::string(400, '9')).has_value());
  EXPECT_EQ(parse_byte_size("8GiB"), int64_t{8} << 30);
  // Whole numbers are exact to the last byte.
  EXPECT_EQ(parse_byte_size("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(parse_byte_size("9007199254740993"), 9007199254740993);
  EXPECT_FALSE(parse_byte_size("8589934592GiB").has_value());
}

TEST(LaunchConfig, Durations) {
  EXPECT_EQ(parse_duration_ms("500ms"), 500);
  EXPECT_EQ(parse_duration_ms("60s"), 60000);
  EXPECT_EQ(parse_duration_ms("10min"), 600000);
  EXPECT_EQ(parse_duration_ms("2h"), 7200000);
  const std::string too_long = std::string(30, '9') + "ms";
  for (const std::string& bad :
       {std::string("60"), std::string("s"), std::string("1.5s"), std::string("-1s"),
        std::string(" 5s"), std::string("5 s"), std::string("5sec"),
        std::string("9223372036854775807h"), too_long})
    EXPECT_FALSE(parse_duration_ms(bad).has_value()) << bad;
  const LaunchConfig c =
      parse("model: m\nscheduler: {worker_timeout: 2s, worker_start_timeout: 30min}\n");
  EXPECT_EQ(c.scheduler.worker_timeout_ms, 2000);
  EXPECT_EQ(c.scheduler.worker_start_timeout_ms, 1800000);
  EXPECT_EQ(parse("model: m\n").scheduler.worker_timeout_ms, 60000);
  expect_error("model: m\nscheduler:\n  worker_timeout: 60\n",
               "test.yaml:3: scheduler.worker_timeout: expected a positive duration such as "
               "500ms, 60s or 10min (got '60')");
  expect_error("model: m\nscheduler:\n  worker_start_timeout: 0s\n",
               "scheduler.worker_start_timeout: expected a positive duration");
}

// yaml-cpp 0.7's LoadAll never returns on these (it pushes empty documents
// forever); found by fuzz_launch_config.
TEST(LaunchConfig, AStrayCommaIsAnErrorNotAHang) {
  expect_error(",a: b\n", "test.yaml:1: not valid YAML: the parser makes no progress");
  expect_error(",pecult paraatzecoding: step,pecult paraativlle-de", "test.yaml:1: not valid YAML");
  expect_error("model: m\n---\n,\n", "not valid YAML");
}

TEST(LaunchConfig, MistakesNameLineKeyExpectedAndGot) {
  expect_error("device: cpu\n", "test.yaml:1: missing required key 'model'");
  expect_error("model: m\nmodle_path: x\n", "test.yaml:2: unknown key 'modle_path'");
  expect_error("model: m\nscheduler:\n  max_num_seqs: 0\n",
               "test.yaml:3: scheduler.max_num_seqs: must be in [1, 1048576] (got 0)");
  expect_error("model: m\nscheduler:\n  max_num_seqs: many\n",
               "test.yaml:3: scheduler.max_num_seqs: expected an integer (got 'many')");
  expect_error("model: m\nscheduler:\n  max_num_sequences: 4\n",
               "test.yaml:3: unknown key 'scheduler.max_num_sequences' (expected one of:");
  expect_error("model: m\ndevice: tpu\n",
               "test.yaml:2: device: expected one of auto, cpu, cuda (got 'tpu')");
  expect_error("model: m\nscheduler:\n  async_scheduling: 2\n",
               "test.yaml:3: scheduler.async_scheduling: expected true or false (got '2')");
  expect_error("model: m\nkv_cache:\n  enable_prefix_caching: yes please\n",
               "kv_cache.enable_prefix_caching: expected true or false (got 'yes please')");
  expect_error("model: m\nkv_cache:\n  memory_budget: lots\n",
               "test.yaml:3: kv_cache.memory_budget: expected a positive size such as 512MiB");
  expect_error("model: m\nkv_cache:\n  memory_fraction: 1.5\n",
               "kv_cache.memory_fraction: must be in [0.01, 1]");
  expect_error("model: m\nparallel:\n  rebalance_threshold: 0.9\n",
               "test.yaml:3: parallel.rebalance_threshold: must be in [1, 100]");
  expect_error("model: m\nparallel:\n  rebalance_window_steps: 0\n",
               "test.yaml:3: parallel.rebalance_window_steps: must be in [1, 1048576] (got 0)");
  expect_error("model: m\nparallel:\n  world_size: 4\n  expert_parallel_size: 3\n",
               "test.yaml:3: parallel: world_size 4 with expert_parallel_size 3 and "
               "tensor_parallel_size 1: the ranks are either data parallel");
  // Data-parallel ranks always spread the experts over all of them.
  expect_error("model: m\nparallel: {world_size: 4, expert_parallel_size: 1}\n",
               "world_size 4 with expert_parallel_size 1 and tensor_parallel_size 1");
  expect_error("model: m\nparallel: {world_size: 4, tensor_parallel_size: 2}\n",
               "world_size 4 with expert_parallel_size 1 and tensor_parallel_size 2");
  expect_error("model: m\nserver:\n  port: 70000\n",
               "test.yaml:3: server.port: must be in [1, 65535] (got 70000)");
  expect_error("model: m\nspeculative:\n  num_speculative_tokens: 4\n",
               "test.yaml:3: speculative: give method: ngram, or a draft_model");
  expect_error("model: m\nspeculative: {method: medusa}\n",
               "speculative.method: expected one of ngram, draft_model (got 'medusa')");
  expect_error("model: m\nspeculative: {method: draft_model}\n",
               "method draft_model needs draft_model: DIR");
  expect_error("model: m\nspeculative: {method: ngram, draft_model: d}\n",
               "method ngram takes no draft_model");
  expect_error("model: m\nspeculative: {method: ngram, num_speculative_tokens: 17}\n",
               "speculative.num_speculative_tokens: must be in [1, 16] (got 17)");
  expect_error("model: m\nspeculative: {method: ngram, ngram: {min_n: 3, max_n: 2}}\n",
               "speculative.ngram: min_n (3) must not exceed max_n (2)");
  expect_error("model: m\nspeculative: {method: ngram, ngram: {n: 3}}\n", "speculative.ngram.n");
  expect_error("model: [a, b]\n", "test.yaml:1: model: expected a path (got a list)");
  expect_error("model: m\nscheduler: 5\n", "scheduler must be a mapping");
  expect_error("model: m\n  bad: [\n", "test.yaml:");
  expect_error("", "the file must be a mapping");
  expect_error("model: m\ndevice: cpu\ndevice: cuda\n",
               "test.yaml:3: key 'device' given twice (first on line 2)");
  expect_error("model: m\nparallel: {world_size: 2, world_size: 4}\n",
               "key 'parallel.world_size' given twice");
  expect_error("model: m\n? [a, b]\n: 1\n", "test.yaml:2: keys must be plain names (got a list)");
  expect_error("model: m\nkv_cache:\n  memory_budget: 1GiB\n  memory_fraction: 0.5\n",
               "kv_cache: give memory_budget or memory_fraction, not both");
  expect_error("model: m\nkv_cache:\n  dtype: f16\n",
               "test.yaml:3: kv_cache.dtype: expected one of f32, bf16, int8, fp8 (got 'f16')");
  expect_error("model: m\nscheduler:\n  preemption_mode: swap\n",
               "test.yaml:3: scheduler.preemption_mode: swap needs kv_cache.swap_space");
}

TEST(LaunchConfig, EmptyQuotedAndExtraValuesAreRefused) {
  // An empty value is reported on its key's line, not on the next token's.
  expect_error("model: m\nparallel:\n\n\n",
               "test.yaml:2: parallel: expected a value (got nothing)");
  expect_error("model: m\nkv_cache:\n  block_size:\n  swap_space: 1GiB\n",
               "test.yaml:3: kv_cache.block_size: expected a value (got nothing)");
  expect_error("model: m\nserver:\n  port: \"80\"\n",
               "test.yaml:3: server.port: expected an integer (got the quoted string '80')");
  expect_error("model: m\nkv_cache:\n  enable_prefix_caching: 'true'\n",
               "test.yaml:3: kv_cache.enable_prefix_caching: expected true or false (got the "
               "quoted string 'true')");
  expect_error("model: ''\n", "test.yaml:1: model: expected a path (got an empty string)");
  expect_error("model: m\n---\nmodel: n\n", "test.yaml:3: a second YAML document");
  // A quoted string value stays a string.
  EXPECT_EQ(parse("model: m\nserver: {api_key: '123'}\n").server.api_key, "123");
  const LaunchConfig served =
      parse("model: m\nserver: {max_queued_requests: 8, served_model_name: tiny}\n");
  EXPECT_EQ(served.server.max_queued_requests, 8);
  EXPECT_EQ(served.server.served_model_name, "tiny");
  expect_error("model: m\nserver:\n  max_queued_requests: 0\n",
               "test.yaml:3: server.max_queued_requests: must be in [1, 1048576] (got 0)");
}

TEST(LaunchConfig, ParallelLayouts) {
  const ParallelConfig ep = parse("model: m\nparallel: {world_size: 4}\n").parallel;
  EXPECT_EQ(check_parallel_layout(ep, ""), 4);  // the default: experts over all ranks
  const ParallelConfig tp =
      parse("model: m\nparallel: {world_size: 2, tensor_parallel_size: 2}\n").parallel;
  EXPECT_EQ(check_parallel_layout(tp, ""), 1);
  EXPECT_EQ(check_parallel_layout(parse("model: m\n").parallel, ""), 1);
  EXPECT_EQ(
      check_parallel_layout(
          parse("model: m\nparallel: {world_size: 2, expert_parallel_size: 2}\n").parallel, ""),
      2);
  // A trailing document marker is not a second document.
  EXPECT_EQ(parse("model: m\n---\n").model, fs::path("/base/m"));
  EXPECT_EQ(parse("model: m\n--- # nothing more\n").model, fs::path("/base/m"));
}

}  // namespace
}  // namespace hive
