// The YAML launch file: the bundled configs parse, and every kind of mistake
// is reported with file:line, the key, what was expected and what was given.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "actors/hive_config.hpp"
#include "base/error.hpp"

namespace hive {
namespace {

namespace fs = std::filesystem;
const fs::path kConfigs = fs::path(HIVE_TEST_DATA) / ".." / ".." / "configs";

HiveConfig parse(const std::string& text) {
  return parse_hive_config(text, "test.yaml", "/base");
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

TEST(HiveConfig, BundledConfigsParse) {
  const HiveConfig cpu = load_hive_config(kConfigs / "cpu.yaml");
  EXPECT_EQ(cpu.model.filename(), "hive-moe-target");
  EXPECT_EQ(cpu.device, DeviceChoice::cpu);
  EXPECT_EQ(cpu.engine.kv_budget.bytes, 256 * 1024 * 1024);
  EXPECT_EQ(cpu.engine.scheduler.max_num_batched_tokens, 256);
  EXPECT_TRUE(cpu.engine.scheduler.async_scheduling);
  EXPECT_FALSE(
      parse("model: m\nscheduler:\n  async_scheduling: false\n").engine.scheduler.async_scheduling);
  const HiveConfig ep = load_hive_config(kConfigs / "ep_cpu4.yaml");
  EXPECT_EQ(ep.parallel.world_size, 4);
  EXPECT_EQ(ep.parallel.expert_placement, PlacementKind::round_robin);
  EXPECT_EQ(ep.parallel.replicate_hot_experts, 1);
  EXPECT_EQ(ep.parallel.rebalance_experts.period_steps, 0);  // live balancing: off unless asked
  const HiveConfig ep_live = load_hive_config(kConfigs / "ep_cpu4_live.yaml");
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
  const HiveConfig ep_mpi = load_hive_config(kConfigs / "ep_mpi4.yaml");
  EXPECT_EQ(ep_mpi.parallel.transport, RankTransport::mpi);
  EXPECT_EQ(ep_mpi.parallel.world_size, 4);
  const HiveConfig tp_mpi = load_hive_config(kConfigs / "tp_mpi2.yaml");
  EXPECT_EQ(tp_mpi.parallel.transport, RankTransport::mpi);
  EXPECT_EQ(tp_mpi.parallel.tensor_parallel_size, 2);
  const HiveConfig spec = load_hive_config(kConfigs / "spec_cpu.yaml");
  EXPECT_EQ(spec.engine.speculative.method, SpeculativeMethod::draft_model);
  EXPECT_EQ(spec.engine.speculative.draft_model.filename(), "hive-draft");
  EXPECT_EQ(spec.engine.speculative.num_speculative_tokens, 4);
  const HiveConfig ngram =
      parse("model: m\nspeculative: {method: ngram, ngram: {min_n: 2, max_n: 4}}\n");
  EXPECT_EQ(ngram.engine.speculative.method, SpeculativeMethod::ngram);
  EXPECT_EQ(ngram.engine.speculative.ngram.min_n, 2);
  EXPECT_EQ(ngram.engine.speculative.ngram.max_n, 4);
  EXPECT_EQ(ngram.engine.speculative.num_speculative_tokens, 4);
}

TEST(HiveConfig, NamedChoicesAreEnums) {
  const HiveConfig c = parse(
      "model: m\ndevice: cpu\nscheduler: {policy: priority, preemption_mode: recompute}\n"
      "parallel: {world_size: 2, expert_placement: round_robin}\nkv_cache: {dtype: f32}\n");
  EXPECT_EQ(c.device, DeviceChoice::cpu);
  EXPECT_EQ(c.engine.scheduler.policy, SchedulingPolicy::priority);
  EXPECT_EQ(c.engine.scheduler.preemption_mode, PreemptionMode::recompute);
  EXPECT_EQ(c.parallel.expert_placement, PlacementKind::round_robin);
  EXPECT_EQ(c.engine.kv_cache_dtype, DType::f32);
  const HiveConfig d = parse("model: m\n");
  EXPECT_EQ(d.engine.scheduler.policy, SchedulingPolicy::fcfs);
  EXPECT_EQ(d.engine.scheduler.preemption_mode, PreemptionMode::by_cost);
  // Unset leaves HIVE_MATMUL_PRECISION's; a bad name is refused.
  EXPECT_FALSE(d.matmul_precision.has_value());
  EXPECT_EQ(parse("model: m\nmatmul_precision: bf16\n").matmul_precision,
            cpu::MatmulPrecision::bf16);
  EXPECT_EQ(parse("model: m\nmatmul_precision: f32\n").matmul_precision, cpu::MatmulPrecision::f32);
  EXPECT_THROW(parse("model: m\nmatmul_precision: fp8\n"), Error);
  // dequantize: off unless asked for, and a boolean.
  EXPECT_FALSE(d.dequantize);
  const HiveConfig widened = parse("model: m.gguf\ndequantize: true\n");
  EXPECT_TRUE(widened.dequantize);
  EXPECT_FALSE(parse("model: m\ndequantize: false\n").dequantize);
  expect_error("model: m\ndequantize: bf16\n", "dequantize: expected true or false (got 'bf16')");
  expect_error("model: m\nparallel: {world_size: 2, transport: tcp}\n",
               "transport: expected one of");
}

// transport: nccl needs CUDA (and MPI, its bootstrap) in the build; a build
// without them says so at parse time, before any process starts.
TEST(HiveConfig, NcclTransportNeedsCudaAndMpiInTheBuild) {
#if defined(HIVE_HAVE_CUDA) && defined(HIVE_HAVE_MPI)
  const HiveConfig ep_nccl = load_hive_config(kConfigs / "ep_nccl2.yaml");
  EXPECT_EQ(ep_nccl.parallel.transport, RankTransport::nccl);
  EXPECT_EQ(ep_nccl.parallel.world_size, 2);
#elif defined(HIVE_HAVE_MPI)
  expect_error("model: m\nparallel: {world_size: 2, transport: nccl}\n",
               "nccl: this Hive was built without CUDA");
#else
  expect_error("model: m\nparallel: {world_size: 2, transport: nccl}\n",
               "nccl: this Hive was built without MPI");
#endif
}

TEST(HiveConfig, DefaultsAndRelativePaths) {
  const HiveConfig c = parse("model: models/m\n");
  EXPECT_EQ(c.model, fs::path("/base/models/m"));
  EXPECT_EQ(c.device, DeviceChoice::automatic);
  EXPECT_EQ(c.engine.block_size, 16);
  EXPECT_EQ(c.engine.kv_budget.bytes, 0);  // memory_fraction of the free memory
  EXPECT_EQ(c.engine.kv_cache_dtype, DType::bf16);
  EXPECT_EQ(parse("model: m\nkv_cache: {dtype: f32}\n").engine.kv_cache_dtype, DType::f32);
  EXPECT_EQ(parse("model: m\nkv_cache: {dtype: int8}\n").engine.kv_cache_dtype, DType::i8);
  EXPECT_EQ(parse("model: m\nkv_cache: {dtype: fp8}\n").engine.kv_cache_dtype, DType::f8_e4m3);
  EXPECT_EQ(c.server.host, "127.0.0.1");
  EXPECT_EQ(c.engine.speculative.method, SpeculativeMethod::none);
  EXPECT_EQ(parse("model: /abs/m\n").model, fs::path("/abs/m"));
}

TEST(HiveConfig, ByteSizes) {
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

TEST(HiveConfig, Durations) {
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
  const HiveConfig c =
      parse("model: m\nscheduler: {worker_timeout: 2s, worker_start_timeout: 30min}\n");
  EXPECT_EQ(c.engine.scheduler.worker_timeout.count(), 2000);
  EXPECT_EQ(c.engine.scheduler.worker_start_timeout.count(), 1800000);
  EXPECT_EQ(parse("model: m\n").engine.scheduler.worker_timeout.count(), 60000);
  expect_error("model: m\nscheduler:\n  worker_timeout: 60\n",
               "test.yaml:3: scheduler.worker_timeout: expected a positive duration such as "
               "500ms, 60s or 10min (got '60')");
  expect_error("model: m\nscheduler:\n  worker_start_timeout: 0s\n",
               "scheduler.worker_start_timeout: expected a positive duration");
}

// yaml-cpp 0.7's LoadAll never returns on these (it pushes empty documents
// forever); found by fuzz_launch_config.
TEST(HiveConfig, AStrayCommaIsAnErrorNotAHang) {
  expect_error(",a: b\n", "test.yaml:1: not valid YAML: the parser makes no progress");
  expect_error(",pecult paraatzecoding: step,pecult paraativlle-de", "test.yaml:1: not valid YAML");
  expect_error("model: m\n---\n,\n", "not valid YAML");
}

TEST(HiveConfig, MistakesNameLineKeyExpectedAndGot) {
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

TEST(HiveConfig, EmptyQuotedAndExtraValuesAreRefused) {
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
  const HiveConfig served =
      parse("model: m\nserver: {max_queued_requests: 8, served_model_name: tiny}\n");
  EXPECT_EQ(served.server.max_queued_requests, 8);
  EXPECT_EQ(served.server.served_model_name, "tiny");
  expect_error("model: m\nserver:\n  max_queued_requests: 0\n",
               "test.yaml:3: server.max_queued_requests: must be in [1, 1048576] (got 0)");
}

TEST(HiveConfig, ParallelLayouts) {
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

// Each value says where it came from: its default, the file's line, or the
// flag that set it last.
TEST(HiveConfig, EveryValueRecordsItsSource) {
  HiveConfig c = parse("model: m\nscheduler:\n  max_num_seqs: 8\n  policy: priority\n");
  EXPECT_EQ(c.source_of("model"), "test.yaml:1");
  EXPECT_EQ(c.source_of("scheduler.max_num_seqs"), "test.yaml:3");
  EXPECT_EQ(c.source_of("scheduler.max_num_batched_tokens"), "default");
  set_config_value(c, "scheduler.max_num_seqs", "4", "flag --max-num-seqs");
  EXPECT_EQ(c.source_of("scheduler.max_num_seqs"), "flag --max-num-seqs");
  EXPECT_EQ(c.source_of("scheduler.policy"), "test.yaml:4");
}

// Flags go on after the file: a flag's value wins, the file's others stay.
TEST(HiveConfig, FlagsOverrideTheFile) {
  HiveConfig c = parse("model: m\nserver: {port: 8080, host: 0.0.0.0}\nkv_cache: {dtype: f32}\n");
  set_config_value(c, "server.port", "9000", "flag --port");
  set_config_value(c, "kv_cache.dtype", "int8", "flag --kv-cache-dtype");
  EXPECT_EQ(c.server.port, 9000);
  EXPECT_EQ(c.server.host, "0.0.0.0");
  EXPECT_EQ(c.engine.kv_cache_dtype, DType::i8);
  // A flag may ask for any free port; a file names a real one.
  set_config_value(c, "server.port", "0", "flag --port");
  EXPECT_EQ(c.server.port, 0);
}

void expect_flag_error(const std::string& key, const std::string& value,
                       const std::string& message) {
  HiveConfig c = parse("model: m\n");
  try {
    set_config_value(c, key, value, "flag --x");
    ADD_FAILURE() << "no error for " << key << " " << value;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos)
        << "got: " << e.what() << "\nwanted: " << message;
  }
}

TEST(HiveConfig, ErrorsNameTheSourceAndTheKey) {
  expect_flag_error("scheduler.max_num_seqs", "0",
                    "flag --x: scheduler.max_num_seqs: must be in [1, 1048576] (got 0)");
  expect_flag_error("kv_cache.dtype", "f16", "flag --x: kv_cache.dtype: expected one of f32");
  expect_flag_error("kv_cache.memory_budget", "lotsMiB", "flag --x: kv_cache.memory_budget:");
  expect_flag_error("scheduler.max_num_sequences", "4",
                    "unknown key 'scheduler.max_num_sequences'");
  // Checks across keys name the key they are about, where it was set.
  HiveConfig c = parse("model: m\n");
  set_config_value(c, "scheduler.preemption_mode", "swap", "flag --preemption");
  try {
    validate(c);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("flag --preemption: scheduler.preemption_mode: swap "
                                         "needs kv_cache.swap_space"),
              std::string::npos)
        << e.what();
  }
}

ModelConfig model_of(int64_t context, int64_t experts) {
  ModelConfig model;
  model.max_position_embeddings = context;
  model.num_experts = experts;
  return model;
}

// resolve() fills what follows from the model's config.json, says so in
// the sources, and refuses what the model cannot do.
TEST(HiveConfig, ResolveDerivesFromTheModel) {
  HiveConfig c = parse("model: models/tiny\nparallel: {world_size: 2}\n");
  resolve(c, model_of(512, 4));
  EXPECT_EQ(c.engine.scheduler.max_model_len, 512);
  EXPECT_EQ(c.source_of("scheduler.max_model_len"), "derived: the model's max_position_embeddings");
  EXPECT_EQ(c.parallel.expert_parallel_size, 2);
  EXPECT_EQ(c.server.served_model_name, "tiny");
  HiveConfig again = c;
  resolve(again, model_of(512, 4));  // idempotent
  EXPECT_EQ(print_config(again), print_config(c));
  HiveConfig too_long = parse("model: m\nscheduler:\n  max_model_len: 1024\n");
  try {
    resolve(too_long, model_of(512, 0));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test.yaml:3: scheduler.max_model_len: must be at most "
                                         "the model's context length, max_position_embeddings "
                                         "512 (got 1024)"),
              std::string::npos)
        << e.what();
  }
  HiveConfig wide = parse("model: m\nparallel:\n  world_size: 8\n");
  EXPECT_THROW(resolve(wide, model_of(512, 4)), Error);
}

// The printed tree without its comments: the values alone.
std::string values_of(const std::string& printed) {
  std::istringstream lines(printed);
  std::string values;
  for (std::string line; std::getline(lines, line);)
    values += line.substr(0, line.find("  #")) + "\n";
  return values;
}

// print_config writes a launch file: parsed again, it gives the same tree.
TEST(HiveConfig, PrintedConfigParsesToTheSameTree) {
  for (const fs::path& file : {kConfigs / "cpu.yaml", kConfigs / "spec_cpu.yaml",
                               kConfigs / "ep_cpu4_live.yaml", kConfigs / "tp_cpu2.yaml"}) {
    HiveConfig c = load_hive_config(file);
    set_config_value(c, "server.port", "9001", "flag --port");
    resolve(c, model_of(4096, 64));
    const std::string printed = print_config(c);
    EXPECT_NE(printed.find("  port: 9001  # flag --port\n"), std::string::npos) << printed;
    EXPECT_NE(printed.find("  policy: fcfs  # "), std::string::npos) << printed;
    HiveConfig again = parse_hive_config(printed, "printed.yaml", "/elsewhere");
    resolve(again, model_of(4096, 64));
    EXPECT_EQ(values_of(print_config(again)), values_of(printed)) << file;
    EXPECT_EQ(again.model, c.model);
    EXPECT_EQ(again.engine.kv_budget.bytes, c.engine.kv_budget.bytes);
    EXPECT_EQ(again.engine.scheduler.max_num_seqs, c.engine.scheduler.max_num_seqs);
  }
  // A set API key is not printed.
  HiveConfig keyed = parse("model: m\nserver: {api_key: secret}\n");
  EXPECT_EQ(print_config(keyed).find("secret"), std::string::npos);
}

}  // namespace
}  // namespace hive
