// Expert and tensor parallelism with ranks as processes (ctest runs it under
// mpirun with 2 and 4 ranks). Each rank's outputs must equal, bit for bit,
// those of the same rank in an InProcessGroup of the same size run inside
// this process (tests/moe/test_model_expert_parallel.cpp and
// tests/model/test_tensor_parallel.cpp tie that group to one plain
// engine): all-to-all moves bytes and all_reduce_sum adds in rank order on
// both transports, so the transport must change nothing. Greedy and seeded
// sampling, both placements, live expert balancing, and a KV pool small
// enough that prefix-cached requests are preempted and recomputed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>

#include "kernels/cpu/cpu_backend.hpp"
#include "parallel/in_process_communicator.hpp"
#include "parallel/mpi_communicator.hpp"
#include "runtime/model/kv_budget.hpp"
#include "tests/common/expert_parallel_run.hpp"
#include "tests/common/model_dirs.hpp"
#include "tests/common/parallel_requests.hpp"
#include "tests/common/random.hpp"

namespace hive {
namespace {

using test::model_dir;
constexpr int kNumPrompts = 9;

Communicator& world() {
  static std::unique_ptr<Communicator> comm = make_mpi_communicator();
  return *comm;
}

std::vector<Request> requests_for(const Model& model) {
  std::vector<Request> requests = test::parallel_requests(model.config().vocab_size, kNumPrompts);
  requests[4].sampling = {0.8f, 40, 0.95f, 77};  // seeded sampling agrees too
  requests[7].sampling = {1.0f, 0, 1.0f, 5};
  return requests;
}

void expect_same_outputs(const std::map<std::string, SequenceOutput>& got,
                         const std::map<std::string, SequenceOutput>& want) {
  ASSERT_FALSE(want.empty());
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [id, w] : want) {
    const SequenceOutput& g = got.at(id);
    EXPECT_EQ(g.token_ids, w.token_ids) << id;
    ASSERT_EQ(g.logits.size(), w.logits.size()) << id;
    for (size_t t = 0; t < w.logits.size(); ++t) {
      ASSERT_EQ(g.logits[t].size(), w.logits[t].size());
      EXPECT_EQ(std::memcmp(g.logits[t].data(), w.logits[t].data(), w.logits[t].size() * 4), 0)
          << id << ", position " << t << ": the logits differ from the in-process group's";
    }
  }
}

// A shared prefix on every prompt (prefix-cache hits across requests),
// long outputs, and a pool per rank of the blocks of the longest request
// alone: two requests that start together run out as they grow, and one is
// preempted and recomputed.
EngineConfig tight_config(const Model& model, std::vector<Request>& requests) {
  EngineConfig config = test::parallel_engine_config();
  int64_t longest = 0;
  for (Request& r : requests) {
    std::vector<int32_t> prompt(20);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(3 + i * 7 % 50);
    prompt.insert(prompt.end(), r.prompt_token_ids.begin(), r.prompt_token_ids.end());
    r.prompt_token_ids = std::move(prompt);
    r.stop.max_tokens = 24;
    longest = std::max(longest, static_cast<int64_t>(r.prompt_token_ids.size()) + 24);
  }
  config.enable_prefix_caching = true;
  const int64_t blocks = (longest + config.block_size - 1) / config.block_size + 1;  // + null
  config.kv_budget.bytes =
      blocks * kv_bytes_per_block(model.config(), config.block_size, config.kv_cache_dtype);
  return config;
}

class MpiExpertParallel : public ::testing::TestWithParam<std::string> {};

TEST_P(MpiExpertParallel, EachRankMatchesItsInProcessTwinBitForBit) {
  SCOPED_TRACE(testing::Message() << GetParam() << ", seed " << test::test_seed());
  Communicator& comm = world();
  CpuBackend cpu;
  Model model(model_dir(GetParam()), cpu);
  const auto experts = static_cast<int>(model.config().num_experts);
  for (const bool tight : {false, true})
    for (const PlacementKind kind : {PlacementKind::contiguous, PlacementKind::round_robin})
      for (const bool live : {false, true}) {
        if (tight && (live || kind == PlacementKind::round_robin)) continue;
        SCOPED_TRACE(testing::Message()
                     << (kind == PlacementKind::contiguous ? "contiguous" : "round_robin")
                     << (live ? ", live balancing" : "") << (tight ? ", tight KV pool" : ""));
        std::vector<Request> requests = requests_for(model);
        const EngineConfig config =
            tight ? tight_config(model, requests) : test::parallel_engine_config();
        const ExpertPlacement placement(experts, comm.world_size(), kind);
        const test::RankRun got =
            test::run_expert_parallel_rank(model, comm, placement, requests, live, config);
        const test::RankRun want = std::move(test::run_expert_parallel_in_process(
            model, requests, comm.world_size(), kind, live, config)[static_cast<size_t>(comm.rank())]);
        expect_same_outputs(got.outputs, want.outputs);
        EXPECT_EQ(got.load, want.load);
        EXPECT_EQ(got.switches, want.switches);
        if (live) {
          EXPECT_GE(got.switches, 1);
        }
        EXPECT_EQ(got.stats.scheduler.num_preemptions_recompute,
                  want.stats.scheduler.num_preemptions_recompute);
        EXPECT_EQ(got.stats.kv_cache.prefix_hit_tokens, want.stats.kv_cache.prefix_hit_tokens);
        if (tight) {
          // The case must be what it claims on some rank: preempted and hit.
          float seen[2] = {static_cast<float>(got.stats.scheduler.num_preemptions_recompute),
                           static_cast<float>(got.stats.kv_cache.prefix_hit_tokens)};
          comm.all_reduce_sum(Tensor::view(seen, DType::f32, {2}));
          EXPECT_GT(seen[0], 0) << "no rank preempted";
          EXPECT_GT(seen[1], 0) << "no rank hit the prefix cache";
        }
      }
}

INSTANTIATE_TEST_SUITE_P(MoeFixtures, MpiExpertParallel,
                         ::testing::Values("qwen3_moe", "mixtral", "qwen2_moe",
                                           "bundled/hive-moe-target", "deepseek_v3",
                                           "deepseek_v2"));

// Tensor parallelism over MPI: two processes, each its shard; every rank's
// outputs equal the same rank's in a 2-thread in-process group.
class MpiTensorParallel : public ::testing::TestWithParam<std::string> {};

TEST_P(MpiTensorParallel, EachRankMatchesItsInProcessTwinBitForBit) {
  SCOPED_TRACE(testing::Message() << GetParam() << ", seed " << test::test_seed());
  Communicator& comm = world();
  if (comm.world_size() != 2) GTEST_SKIP() << "tensor parallelism runs on 2 ranks here";
  CpuBackend cpu;
  const EngineConfig config = test::parallel_engine_config();
  std::vector<Request> requests;
  std::vector<RequestOutput> got;
  {
    Model shard(model_dir(GetParam()), cpu, comm);
    requests = requests_for(shard);
    got = LLMEngine(shard, config).generate(requests);
  }
  InProcessGroup group(2);
  std::vector<std::vector<RequestOutput>> twins(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r, local = std::shared_ptr<Communicator>(group.communicator(r))] {
      try {
        Model shard(model_dir(GetParam()), cpu, *local);
        twins[static_cast<size_t>(r)] = LLMEngine(shard, config).generate(requests);
      } catch (const std::exception& e) {
        mpi_abort(e.what());  // its in-process peer would wait for ever
      }
    });
  for (std::thread& t : ranks) t.join();
  const std::vector<RequestOutput>& want = twins[static_cast<size_t>(comm.rank())];
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    std::map<std::string, SequenceOutput> a{{got[i].request_id, got[i].samples.at(0)}};
    std::map<std::string, SequenceOutput> b{{want[i].request_id, want[i].samples.at(0)}};
    expect_same_outputs(a, b);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, MpiTensorParallel,
                         ::testing::Values("llama", "qwen3", "mixtral", "qwen2_moe",
                                           "bundled/hive-moe-target"));

}  // namespace
}  // namespace hive
