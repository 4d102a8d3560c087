// hive::Engine with several data-parallel CPU ranks (MoE layers expert-
// parallel over an in-process group): outputs must equal the single-rank
// offline engine's, metrics must count every routed token, hot experts get
// replicated (once, or live as the load moves) without changing a token,
// and a fault in one rank fails the requests that ran there (instead of
// hanging its peer in a collective) while the other ranks' requests
// continue and the engine keeps serving. Two workers can also hold one
// tensor-parallel model.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <numeric>
#include <vector>

#include "actors/engine.hpp"
#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "runtime/model/kv_budget.hpp"
#include "tests/common/logits.hpp"
#include "tests/common/model_dirs.hpp"
#include "tests/common/parallel_requests.hpp"
#include "tests/common/random.hpp"

namespace hive {
namespace {

const std::string kModels = std::string(HIVE_TEST_DATA) + "/models/";

HiveConfig options(const std::string& model, int world, const std::string& placement,
                   int replicate) {
  HiveConfig o;
  o.model = kModels + model;
  o.engine.block_size = 4;
  o.engine.kv_budget = KVBudget{int64_t{1} << 20, 0.0};
  // Off: the tests compare expert loads of batches run twice, and which
  // prompt blocks a second batch finds cached depends on when its
  // requests arrive.
  o.engine.enable_prefix_caching = false;
  o.parallel.world_size = world;
  o.parallel.expert_placement = parse_placement_kind(placement);
  o.parallel.replicate_hot_experts = replicate;
  return o;
}

std::vector<Request> make_requests(int64_t vocab) {
  return test::parallel_requests(vocab, 6);
}

// Submits every request, then reads each stream: the final token ids (or the error).
std::vector<TokenEvent> run_all(Engine& engine, const std::vector<Request>& requests) {
  std::vector<TokenStream> streams;
  for (const Request& r : requests) streams.push_back(engine.submit(r));
  std::vector<TokenEvent> finished;
  for (TokenStream& stream : streams)
    for (const TokenEvent& event : stream)
      if (event.finished) finished.push_back(event);
  return finished;
}

// The engine's final events carry the offline engine's tokens, without
// errors, and its logits (the requests ask for them) within `max_logits_difference`
// relative to each row's scale.
void expect_same_outputs(const std::vector<TokenEvent>& got,
                         const std::vector<RequestOutput>& expected, double max_logits_difference) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const SequenceOutput& want = expected[i].samples.at(0);
    EXPECT_EQ(got[i].error, "");
    EXPECT_EQ(got[i].token_ids, want.token_ids) << expected[i].request_id;
    ASSERT_EQ(want.logits.size(), want.token_ids.size()) << "the requests return logits";
    EXPECT_LE(test::max_relative_logits_difference(want.logits, got[i].logits),
              max_logits_difference)
        << expected[i].request_id;
  }
}

class EngineParallel : public ::testing::TestWithParam<std::string> {};

TEST_P(EngineParallel, RanksMatchOneRankAndCountExpertLoad) {
  SCOPED_TRACE(testing::Message() << GetParam() << ", seed " << test::test_seed());
  CpuBackend cpu;
  Model model(kModels + GetParam(), cpu);
  const ModelConfig& c = model.config();
  const std::vector<Request> requests = make_requests(c.vocab_size);
  const std::vector<RequestOutput> expected =
      LLMEngine(model, options(GetParam(), 1, "contiguous", 0).engine).generate(requests);
  // Every prompt token and every sampled token but the last runs through each MoE layer once.
  int64_t tokens = 0;
  for (const Request& r : requests)
    tokens += static_cast<int64_t>(r.prompt_token_ids.size()) + r.stop.max_tokens - 1;
  for (const int world : {2, 4})
    for (const std::string placement : {"contiguous", "round_robin"}) {
      SCOPED_TRACE(testing::Message() << "world " << world << ", " << placement);
      Engine engine(options(GetParam(), world, placement, world == 4 ? 1 : 0));
      // Data-parallel attention and expert parallelism change no sum: exact.
      expect_same_outputs(run_all(engine, requests), expected, 0.0);
      const EngineMetrics m = engine.metrics();
      EXPECT_EQ(m.world_size, world);
      ASSERT_EQ(m.expert_load.size(), static_cast<size_t>(c.num_layers * c.num_experts));
      ASSERT_EQ(m.expert_imbalance.size(), static_cast<size_t>(c.num_layers));
      for (int64_t layer = 0; layer < c.num_layers; ++layer) {
        const auto begin = m.expert_load.begin() + layer * c.num_experts;
        const int64_t sum = std::accumulate(begin, begin + c.num_experts, int64_t{0});
        const double imbalance = m.expert_imbalance[static_cast<size_t>(layer)];
        if (c.is_moe_layer(layer)) {
          EXPECT_EQ(sum, tokens * c.num_experts_per_token) << "layer " << layer;
          EXPECT_GE(imbalance, 1.0) << "layer " << layer;
        } else {
          EXPECT_EQ(sum, 0) << "dense layer " << layer;
          EXPECT_EQ(imbalance, 0.0);
        }
      }
      // Some tokens crossed ranks, never more than were routed.
      ASSERT_EQ(m.expert_remote.size(), m.expert_load.size());
      int64_t crossed = 0;
      for (size_t i = 0; i < m.expert_load.size(); ++i) {
        EXPECT_LE(m.expert_remote[i], m.expert_load[i]);
        crossed += m.expert_remote[i];
      }
      EXPECT_GT(crossed, 0);
      // With replication asked for, the hottest expert is held by every rank.
      EXPECT_EQ(m.replicated_experts.size(), world == 4 ? 1u : 0u);
      EXPECT_EQ(engine.shutdown(), 0);
    }
}

// The expert actor's replica list reaches every worker: once the hottest
// expert is replicated (after the first step), each rank serves its own
// tokens for it. A second batch, run after the first has finished, sends
// none of them to another rank; without replication some cross.
TEST_P(EngineParallel, AReplicatedExpertKeepsItsTokensOnTheirRanks) {
  SCOPED_TRACE(testing::Message() << GetParam() << ", seed " << test::test_seed());
  CpuBackend cpu;
  Model model(kModels + GetParam(), cpu);
  const ModelConfig& c = model.config();
  const std::vector<Request> requests = make_requests(c.vocab_size);
  // The tokens of `expert` that crossed ranks, over all layers.
  const auto crossed = [&](const EngineMetrics& m, int32_t expert) {
    int64_t sum = 0;
    for (int64_t layer = 0; layer < c.num_layers; ++layer)
      sum += m.expert_remote.at(static_cast<size_t>(layer * c.num_experts + expert));
    return sum;
  };
  std::vector<EngineMetrics> first, second;
  for (const int replicate : {0, 1}) {
    Engine engine(options(GetParam(), 4, "round_robin", replicate));
    for (std::vector<EngineMetrics>* after : {&first, &second}) {
      for (const TokenEvent& event : run_all(engine, requests)) EXPECT_EQ(event.error, "");
      after->push_back(engine.metrics());
    }
    EXPECT_EQ(engine.shutdown(), 0);
  }
  ASSERT_EQ(first[1].replicated_experts.size(), 1u);
  const int32_t hot = first[1].replicated_experts[0];
  EXPECT_EQ(second[0].expert_load, second[1].expert_load);  // the same routing
  EXPECT_GT(crossed(second[0], hot) - crossed(first[0], hot), 0) << "expert " << hot;
  EXPECT_EQ(crossed(second[1], hot) - crossed(first[1], hot), 0) << "expert " << hot;
  // Before the replica existed, its tokens crossed as they did without one.
  EXPECT_GT(crossed(first[1], hot), 0);
}

// Live balancing at its most eager (a check every step over a two-step
// window, any imbalance above 1 re-planned): the placement switches between
// steps while requests run, and every token and logit stays exactly the
// single-rank engine's; every routed token is counted once.
TEST_P(EngineParallel, LiveBalancingSwitchesPlacementWithoutChangingAToken) {
  SCOPED_TRACE(testing::Message() << GetParam() << ", seed " << test::test_seed());
  CpuBackend cpu;
  Model model(kModels + GetParam(), cpu);
  const ModelConfig& c = model.config();
  const std::vector<Request> requests = make_requests(c.vocab_size);
  const std::vector<RequestOutput> expected =
      LLMEngine(model, options(GetParam(), 1, "contiguous", 0).engine).generate(requests);
  int64_t tokens = 0;
  for (const Request& r : requests)
    tokens += static_cast<int64_t>(r.prompt_token_ids.size()) + r.stop.max_tokens - 1;
  HiveConfig o = options(GetParam(), 4, "contiguous", 0);
  o.parallel.rebalance_experts = {
      .period_steps = 1, .window_steps = 2, .slots_per_rank = 2, .threshold = 1.0};
  Engine engine(o);
  expect_same_outputs(run_all(engine, requests), expected, 0.0);
  const EngineMetrics m = engine.metrics();
  EXPECT_GE(m.expert_replans, 1);
  int64_t routed = 0;
  for (const int64_t count : m.expert_load) routed += count;
  int64_t moe_layers = 0;
  for (int64_t layer = 0; layer < c.num_layers; ++layer) moe_layers += c.is_moe_layer(layer);
  EXPECT_EQ(routed, tokens * c.num_experts_per_token * moe_layers);
  EXPECT_EQ(engine.shutdown(), 0);
}

INSTANTIATE_TEST_SUITE_P(MoeFixtures, EngineParallel,
                         ::testing::Values("qwen3_moe", "mixtral", "deepseek_v3", "deepseek_v2"));

// Two workers holding one tensor-parallel model: the same tokens as one rank.
TEST(EngineTensorParallel, TwoRanksMatchTheOfflineEngine) {
  for (const std::string name : {"qwen2", "qwen3_moe", "bundled/hive-moe-target"}) {
    SCOPED_TRACE(testing::Message() << name << ", seed " << test::test_seed());
    CpuBackend cpu;
    Model model(test::model_dir(name), cpu);
    const std::vector<Request> requests = make_requests(model.config().vocab_size);
    HiveConfig o = options("", 2, "contiguous", 0);
    o.model = test::model_dir(name);
    // f32 KV: with bf16 a K/V value the split sum moves across a rounding
    // boundary changes by a bf16 step, and the bound below is for f32.
    o.engine.kv_cache_dtype = DType::f32;
    const std::vector<RequestOutput> expected = LLMEngine(model, o.engine).generate(requests);
    o.parallel.tensor_parallel_size = 2;
    Engine engine(o);
    // Each all-reduce splits a dot product in two: within 1e-5 of the scale.
    expect_same_outputs(run_all(engine, requests), expected, 1e-5);
    const EngineMetrics m = engine.metrics();
    EXPECT_EQ(m.world_size, 2);
    EXPECT_EQ(m.num_free_blocks, m.num_blocks);
    EXPECT_EQ(engine.shutdown(), 0);
  }
}

TEST(EngineTensorParallel, LaunchFilesMixingTensorAndExpertParallelismAreRejected) {
  HiveConfig config;
  config.model = test::model_dir("qwen3_moe");
  config.parallel.world_size = 4;
  config.parallel.tensor_parallel_size = 2;
  try {
    validate(config);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("parallel: world_size 4 with expert_parallel_size 1 and "
                                         "tensor_parallel_size 2: the ranks are either"),
              std::string::npos)
        << e.what();
  }
  config.parallel.tensor_parallel_size = 4;
  EXPECT_NO_THROW(validate(config));
  // Data-parallel ranks spread the experts over all of them; nothing else.
  config.parallel.tensor_parallel_size = 1;
  EXPECT_NO_THROW(validate(config));
  config.parallel.expert_parallel_size = 2;
  EXPECT_THROW(validate(config), Error);
}

// A CPU backend that reports 64 MiB of memory, 48 MiB of it free: the KV
// pool is a share of the memory of the device the model's backend allocates
// from, not of the host's, and the figures hold still while a test runs.
class SmallMemoryBackend : public CpuBackend {
 public:
  int64_t memory_bytes() const override { return int64_t{64} << 20; }
  int64_t free_memory_bytes() const override { return int64_t{48} << 20; }
};

// In-process CPU ranks share the host's memory: a memory fraction is for the
// whole process, so two ranks get half the blocks each, not the whole
// fraction each.
TEST(EngineParallel, CpuRanksSplitAMemoryFractionBetweenThem) {
  SmallMemoryBackend small;
  auto model = std::make_shared<Model>(kModels + "qwen3_moe", small);
  EngineConfig config;
  config.kv_budget = KVBudget{0, 0.5};
  config.scheduler.max_num_seqs = 1 << 20;  // no ceiling from the scheduler's limits
  const int64_t one = make_scheduler_setup(model, config, 1).core.kv_cache.num_device_blocks;
  const int64_t each_of_two =
      make_scheduler_setup(model, config, 2).core.kv_cache.num_device_blocks;
  EXPECT_LE(2 * each_of_two, one);
  EXPECT_GE(2 * each_of_two, one * 9 / 10);
  config.kv_budget = KVBudget{int64_t{1} << 20, 0.0};  // bytes: per rank, as per device
  EXPECT_EQ(make_scheduler_setup(model, config, 2).core.kv_cache.num_device_blocks,
            make_scheduler_setup(model, config, 1).core.kv_cache.num_device_blocks);
}

// The KV pool is a share of the free memory of the device the model's
// backend allocates from (read after the weights are loaded), not of the
// host's.
TEST(EngineParallel, TheKVPoolIsAShareOfTheBackendsMemory) {
  SmallMemoryBackend small;
  auto model = std::make_shared<Model>(kModels + "qwen3_moe", small);
  EngineConfig config;
  config.kv_budget = KVBudget{0, 0.5};
  config.scheduler.max_num_seqs = 1 << 20;  // no ceiling from the scheduler's limits
  const int64_t bytes_per_block =
      kv_bytes_per_block(model->config(), config.block_size, config.kv_cache_dtype);
  for (const int world : {1, 2}) {
    const int64_t share = (int64_t{48} << 20) / world / 2;
    EXPECT_EQ(make_scheduler_setup(model, config, world).core.kv_cache.num_device_blocks,
              share / bytes_per_block)
        << "world " << world;
  }
  EXPECT_EQ(LLMEngine(*model, config).kv_cache_manager().device_pool().num_blocks(),
            ((int64_t{48} << 20) / 2) / bytes_per_block);
  // More than the backend has is an error, however much the host has.
  config.kv_budget = KVBudget{int64_t{65} << 20, 0.0};
  EXPECT_THROW(make_scheduler_setup(model, config, 1), Error);
}

// A fault on rank 1 fails the requests that ran there; rank 0's requests
// lose their KV with the replaced group but are computed again and finish
// exactly as they would have, a seeded sampled one included.
TEST(EngineParallelFaults, AFailedRankFailsItsRequestsAndTheOthersContinue) {
  SCOPED_TRACE(testing::Message() << "seed " << test::test_seed());
  CpuBackend cpu;
  Model model(kModels + "qwen2_moe", cpu);
  std::vector<Request> requests = make_requests(model.config().vocab_size);
  for (const size_t i : {0, 2}) requests[i].stop.max_tokens = 12;  // running at the fault
  requests[2].sampling = {0.8f, 40, 0.95f, 77};
  Engine engine(options("qwen2_moe", 2, "round_robin", 0));
  const std::vector<RequestOutput> expected =
      LLMEngine(model, options("qwen2_moe", 1, "contiguous", 0).engine).generate(requests);
  // Requests alternate between the ranks: r0 and r2 on rank 0, r1 on rank 1.
  std::vector<TokenStream> streams;
  for (size_t i = 0; i < 3; ++i) streams.push_back(engine.submit(requests[i]));
  std::vector<TokenEvent> first(3);
  size_t r0_tokens = 0;
  while (r0_tokens < 3) {
    const std::optional<TokenEvent> event = streams[0].next();
    ASSERT_TRUE(event && !event->finished);
    r0_tokens += event->token_ids.size();
  }
  engine.inject_worker_fault(1);  // rank 1's next step throws
  for (size_t i = 0; i < 3; ++i)
    for (const TokenEvent& event : streams[i])
      if (event.finished) first[i] = event;
  for (size_t i : {0, 2}) {
    EXPECT_EQ(first[i].error, "") << requests[i].id;
    EXPECT_EQ(first[i].token_ids, expected[i].samples.at(0).token_ids) << requests[i].id;
  }
  // r1 ran on rank 1: it fails, unless it finished before the faulty step.
  if (first[1].error.empty()) {
    EXPECT_EQ(first[1].token_ids, expected[1].samples.at(0).token_ids);
  } else {
    EXPECT_NE(first[1].error.find("worker rank 1 failed"), std::string::npos) << first[1].error;
  }
  // Fresh workers on a fresh group serve the rest exactly.
  const std::vector<Request> rest(requests.begin() + 3, requests.end());
  const std::vector<TokenEvent> got = run_all(engine, rest);
  ASSERT_EQ(got.size(), rest.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(got[i].token_ids, expected[i + 3].samples.at(0).token_ids) << rest[i].id;
  EXPECT_EQ(engine.metrics().num_worker_restarts, 1);
}

// Workers that fail again as soon as they are restarted (here: the
// checkpoint a tensor-parallel worker loads its shard from is gone) are not
// restarted for ever; every request fails and the engine says why.
TEST(EngineParallelFaults, WorkersThatCannotStartStopTheEngineWithTheCause) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / str_cat("hive-vanishing-", ::getpid());
  fs::remove_all(dir);
  fs::copy(kModels + "qwen2", dir, fs::copy_options::recursive);
  HiveConfig o = options("qwen2", 2, "contiguous", 0);
  o.model = dir;
  o.parallel.tensor_parallel_size = 2;
  Engine engine(o);
  const std::vector<Request> requests = make_requests(engine.model_config().vocab_size);
  ASSERT_EQ(run_all(engine, {requests[0]}).at(0).error, "");  // the workers have loaded
  fs::remove_all(dir);
  engine.inject_worker_fault(0);
  const std::vector<TokenEvent> failed = run_all(engine, {requests[1]});
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_NE(failed[0].error.find("injected fault"), std::string::npos) << failed[0].error;
  // The restarted workers cannot load their shards. A request sent to them
  // fails with that cause; by the time it has, the last restart is under way,
  // so the next one fails when the engine gives up, or is refused after.
  const std::vector<TokenEvent> later = run_all(engine, {requests[2]});
  ASSERT_EQ(later.size(), 1u);
  EXPECT_NE(later[0].error.find("could not start: " + dir.string()), std::string::npos)
      << later[0].error;
  const std::vector<TokenEvent> last = run_all(engine, {requests[3]});
  ASSERT_EQ(last.size(), 1u);
  for (const std::string part :
       {"the workers failed 3 times in a row without completing a step", "could not start"})
    EXPECT_NE(last[0].error.find(part), std::string::npos) << last[0].error;
  EXPECT_EQ(engine.metrics().num_worker_restarts, 2);
  EXPECT_EQ(engine.shutdown(), 0);
}

}  // namespace
}  // namespace hive
