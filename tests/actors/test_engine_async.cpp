// hive::Engine with async scheduling on and off: on real threads, under a
// KV pool small enough to preempt, prefix caching, parallel samples and
// stops no plan can foresee, every sample is the offline engine's.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actors/engine.hpp"
#include "actors/hive_config.hpp"
#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "runtime/loader/safetensors.hpp"

namespace hive {
namespace {

EngineConfig tight_config(bool async_scheduling) {
  EngineConfig config;
  config.block_size = 4;
  // A block of 4 tokens holds 3 layers x K and V x 2 heads x 16 values per
  // token, bf16 (the default): 768 bytes. 12 blocks for 7 sequences of up
  // to 29 tokens: they preempt, by swapping while 8 host blocks last, then
  // by recomputing.
  constexpr int64_t kBlockBytes = 4 * 3 * 2 * 2 * 16 * 2;
  config.kv_budget = KVBudget{12 * kBlockBytes, 0.0};
  config.swap_space_bytes = 8 * kBlockBytes;
  config.enable_prefix_caching = true;
  config.scheduler.max_num_batched_tokens = 16;
  config.scheduler.async_scheduling = async_scheduling;
  return config;
}

std::vector<Request> workload(const std::vector<std::vector<int32_t>>& stops) {
  std::vector<Request> requests;
  const std::vector<int32_t> shared = {7, 3, 9, 1, 4, 8, 2, 6};
  for (int i = 0; i < 6; ++i) {
    Request r;
    r.id = "r" + std::to_string(i);
    if (i % 2 == 0) r.prompt_token_ids = shared;  // prefix-cache hits
    for (int k = 0; k <= i + 2; ++k) r.prompt_token_ids.push_back((i * 11 + k * 5) % 90 + 3);
    r.stop.max_tokens = 8 + i;
    r.stop.ignore_eos = true;
    if (i == 1) {
      r.n = 2;
      r.sampling.temperature = 0.9f;
      r.sampling.seed = 5;
      r.sampling.frequency_penalty = 0.5f;
      r.sampling.repetition_penalty = 1.2f;
    }
    if (i == 2 || i == 3) {
      // Penalties count the pending token the runner resolves itself.
      r.sampling.presence_penalty = 0.6f;
      r.sampling.repetition_penalty = 1.4f;
      r.sampling.logprobs = 2;
    }
    if (i == 3) {
      r.sampling.temperature = 0.7f;
      r.sampling.min_p = 0.1f;
      r.sampling.seed = 9;
    }
    if (static_cast<size_t>(i) < stops.size())
      r.stop.stop_token_ids = stops[static_cast<size_t>(i)];
    requests.push_back(std::move(r));
  }
  return requests;
}

using Samples = std::map<std::pair<std::string, int>, std::vector<int32_t>>;

using Logprobs = std::map<std::pair<std::string, int>, std::vector<TokenLogprobs>>;

Samples offline(const EngineConfig& config, const std::vector<Request>& requests,
                int64_t* preemptions = nullptr, Logprobs* logprobs = nullptr) {
  CpuBackend cpu;
  Model model(std::string(HIVE_TEST_DATA) + "/models/qwen3_moe", cpu);
  LLMEngine engine(model, config);
  Samples samples;
  for (const RequestOutput& out : engine.generate(requests))
    for (const SequenceOutput& s : out.samples) {
      samples[{out.request_id, s.sample_index}] = s.token_ids;
      if (logprobs && !s.logprobs.empty())
        (*logprobs)[{out.request_id, s.sample_index}] = s.logprobs;
    }
  const SchedulerStats& stats = engine.stats().scheduler;
  if (preemptions) *preemptions = stats.num_preemptions_recompute + stats.num_preemptions_swap;
  return samples;
}

class EngineAsync : public ::testing::TestWithParam<bool> {};

TEST_P(EngineAsync, EverySampleIsTheOfflineEngines) {
  const EngineConfig config = tight_config(GetParam());
  // Stop tokens taken from a first run, so those requests end early, at a
  // token the scheduler learns of only after it planned the next step.
  const Samples unstopped = offline(config, workload({}));
  const std::vector<std::vector<int32_t>> stops = {{unstopped.at({"r0", 0}).at(2)},
                                                   {},
                                                   {unstopped.at({"r2", 0}).at(1)},
                                                   {},
                                                   {unstopped.at({"r4", 0}).at(4)}};
  const std::vector<Request> requests = workload(stops);
  int64_t preemptions = 0;
  Logprobs expected_logprobs;
  const Samples expected = offline(config, requests, &preemptions, &expected_logprobs);
  EXPECT_EQ(expected_logprobs.size(), 2u);
  EXPECT_GT(preemptions, 0);  // the workload does preempt (offline, same pool)
  EXPECT_LT(expected.at({"r0", 0}).size(), 8u);
  EXPECT_LT(expected.at({"r2", 0}).size(), 10u);

  HiveConfig options;
  options.model = std::string(HIVE_TEST_DATA) + "/models/qwen3_moe";
  options.engine = config;
  Engine engine(options);
  std::vector<TokenStream> streams;
  for (const Request& r : requests) streams.push_back(engine.submit(r));
  Samples got, streamed;
  Logprobs got_logprobs, streamed_logprobs;
  for (TokenStream& stream : streams)
    for (const TokenEvent& e : stream) {
      EXPECT_EQ(e.error, "") << e.request_id;
      std::vector<int32_t>& into = (e.finished ? got : streamed)[{e.request_id, e.sample_index}];
      into.insert(into.end(), e.token_ids.begin(), e.token_ids.end());
      if (e.logprobs.empty()) continue;
      EXPECT_EQ(e.logprobs.size(), e.token_ids.size());
      std::vector<TokenLogprobs>& lp =
          (e.finished ? got_logprobs : streamed_logprobs)[{e.request_id, e.sample_index}];
      lp.insert(lp.end(), e.logprobs.begin(), e.logprobs.end());
    }
  EXPECT_EQ(got, expected);
  // Every token was streamed once, in order, preempted or not.
  EXPECT_EQ(streamed, expected);
  // Logprobs too, with each token and again at the end.
  for (const Logprobs* lp : {&got_logprobs, &streamed_logprobs}) {
    ASSERT_EQ(lp->size(), expected_logprobs.size());
    for (const auto& [key, want] : expected_logprobs) {
      const std::vector<TokenLogprobs>& have = lp->at(key);
      ASSERT_EQ(have.size(), want.size()) << key.first;
      for (size_t t = 0; t < want.size(); ++t) {
        EXPECT_NEAR(have[t].logprob, want[t].logprob, 1e-4) << key.first << " token " << t;
        EXPECT_EQ(have[t].top_token_ids, want[t].top_token_ids) << key.first << " token " << t;
      }
    }
  }
  const EngineMetrics m = engine.metrics();
  EXPECT_EQ(m.num_blocks, 11);  // the null block is not allocatable
  EXPECT_EQ(m.num_finished_requests, 6);
  EXPECT_EQ(m.num_free_blocks, m.num_blocks);
  EXPECT_EQ(engine.shutdown(ShutdownMode::drain), 0);
}

// The qwen3_moe fixture with token 500's embedding NaN: a sequence fed it
// has NaN logits and cannot be sampled.
std::filesystem::path nan_token_model() {
  namespace fs = std::filesystem;
  const fs::path source = std::string(HIVE_TEST_DATA) + "/models/qwen3_moe";
  const fs::path dir = fs::temp_directory_path() / str_cat("hive-nan-token-", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(source / "config.json", dir / "config.json");
  SafetensorsFile original(source / "model.safetensors");
  std::map<std::string, Tensor> tensors = original.tensors();
  const Tensor& embed = tensors.at("model.embed_tokens.weight");
  std::vector<float> rows(embed.as<float>(), embed.as<float>() + embed.numel());
  const int64_t vocab = embed.size(0), hidden = embed.size(1);
  std::fill_n(rows.begin() + 500 * hidden, hidden, std::numeric_limits<float>::quiet_NaN());
  tensors["model.embed_tokens.weight"] = Tensor::view(rows.data(), DType::f32, {vocab, hidden});
  write_safetensors(dir / "model.safetensors", tensors);
  return dir;
}

// With two steps in flight the step after a failed sample already feeds the
// sequence's pending token: the sequence must still fail alone.
TEST_P(EngineAsync, ASequenceThatCouldNotBeSampledFailsAlone) {
  HiveConfig options;
  options.model = nan_token_model();
  options.engine = tight_config(GetParam());
  Request good, bad;
  good.id = "good";
  good.prompt_token_ids = {5, 6, 7};
  good.stop.max_tokens = 6;
  good.stop.ignore_eos = true;
  bad = good;
  bad.id = "bad";
  bad.prompt_token_ids = {5, 500, 7};
  std::map<std::string, TokenEvent> finished;
  {
    Engine engine(options);
    TokenStream good_stream = engine.submit(good), bad_stream = engine.submit(bad);
    for (TokenStream* stream : {&good_stream, &bad_stream})
      for (const TokenEvent& e : *stream)
        if (e.finished) finished[e.request_id] = e;
    EXPECT_EQ(engine.metrics().num_worker_restarts, 0);
  }
  std::filesystem::remove_all(options.model);
  EXPECT_EQ(finished.at("good").error, "");
  EXPECT_EQ(finished.at("good").token_ids.size(), 6u);
  EXPECT_NE(finished.at("bad").error.find("no token can be sampled"), std::string::npos)
      << finished.at("bad").error;
}

TEST(EngineAsyncOption, ALaunchFileTurnsItOffAndTheSchedulerKeepsOneStepInFlight) {
  HiveConfig launch = parse_hive_config("model: qwen3_moe\n", "launch.yaml",
                                        std::string(HIVE_TEST_DATA) + "/models");
  EXPECT_TRUE(launch.engine.scheduler.async_scheduling);
  launch = parse_hive_config("model: qwen3_moe\nscheduler: {async_scheduling: false}\n",
                             "launch.yaml", std::string(HIVE_TEST_DATA) + "/models");
  EXPECT_FALSE(launch.engine.scheduler.async_scheduling);
  CpuBackend cpu;
  const auto model = std::make_shared<Model>(launch.model, cpu);
  EXPECT_FALSE(make_scheduler_setup(model, launch.engine, 1).core.scheduler.async_scheduling);
  EXPECT_TRUE(make_scheduler_setup(model, tight_config(true), 1).core.scheduler.async_scheduling);
}

TEST(EngineLaunchOptions, ALaunchFileSetsTheWorkerTimeouts) {
  const std::string models = std::string(HIVE_TEST_DATA) + "/models";
  const SchedulerConfig defaults =
      parse_hive_config("model: qwen3_moe\n", "launch.yaml", models).engine.scheduler;
  EXPECT_EQ(defaults.worker_timeout, std::chrono::seconds(60));
  EXPECT_EQ(defaults.worker_start_timeout, std::chrono::minutes(10));
  const SchedulerConfig set = parse_hive_config(
                                  "model: qwen3_moe\nscheduler: {worker_timeout: 2500ms, "
                                  "worker_start_timeout: 90s}\n",
                                  "launch.yaml", models)
                                  .engine.scheduler;
  EXPECT_EQ(set.worker_timeout, std::chrono::milliseconds(2500));
  EXPECT_EQ(set.worker_start_timeout, std::chrono::seconds(90));
}

TEST(EngineLaunchOptions, DeviceAutoMeansWhatItMeansOnTheCommandLine) {
  // The launch file's "auto" reaches select_backend as the CLI's --device
  // does (a CUDA device when one is there), instead of meaning the CPU.
  const std::string models = std::string(HIVE_TEST_DATA) + "/models";
  EXPECT_EQ(parse_hive_config("model: qwen3_moe\n", "launch.yaml", models).device,
            DeviceChoice::automatic);
  EXPECT_EQ(HiveConfig{}.device, DeviceChoice::automatic);
  EXPECT_EQ(parse_hive_config("model: qwen3_moe\ndevice: cpu\n", "launch.yaml", models).device,
            DeviceChoice::cpu);
}

INSTANTIATE_TEST_SUITE_P(Scheduling, EngineAsync, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "async" : "one_step_at_a_time"; });

}  // namespace
}  // namespace hive

namespace hive {
namespace {

// hive::Engine speculating (n-gram lookup; the fixture drafting for itself)
// in the same tight pool: the greedy samples are the offline engine's
// without speculation, streamed once each, and the metrics count the drafts.
class EngineSpeculation : public ::testing::TestWithParam<SpeculativeMethod> {};

TEST_P(EngineSpeculation, GreedySamplesAreThoseWithout) {
  const std::string model = std::string(HIVE_TEST_DATA) + "/models/qwen3_moe";
  EngineConfig config = tight_config(true);
  const std::vector<Request> requests = workload({});
  const Samples expected = offline(config, requests);
  config.speculative.method = GetParam();
  config.speculative.num_speculative_tokens = 3;
  config.speculative.adaptive = false;  // the mechanics, not the control
  if (GetParam() == SpeculativeMethod::draft_model) config.speculative.draft_model = model;
  HiveConfig options;
  options.model = model;
  options.engine = config;
  Engine engine(options);
  std::vector<TokenStream> streams;
  for (const Request& r : requests) streams.push_back(engine.submit(r));
  Samples got, streamed;
  for (TokenStream& stream : streams)
    for (const TokenEvent& e : stream) {
      EXPECT_EQ(e.error, "") << e.request_id;
      std::vector<int32_t>& into = (e.finished ? got : streamed)[{e.request_id, e.sample_index}];
      into.insert(into.end(), e.token_ids.begin(), e.token_ids.end());
    }
  for (const Request& r : requests) {
    if (r.sampling.temperature > 0) continue;  // another stream of draws
    EXPECT_EQ(got.at({r.id, 0}), expected.at({r.id, 0})) << r.id;
    EXPECT_EQ(streamed.at({r.id, 0}), expected.at({r.id, 0})) << r.id;
  }
  const EngineMetrics m = engine.metrics();
  EXPECT_GT(m.spec_num_drafts, 0);
  EXPECT_GT(m.spec_num_accepted_tokens, 0);
  EXPECT_GE(m.spec_num_draft_tokens, m.spec_num_accepted_tokens);
  ASSERT_EQ(m.spec_accepted_per_position.size(), 3u);
  if (GetParam() == SpeculativeMethod::draft_model) {
    // The draft actor proposed windows ahead, and the greedy samples (the
    // draft is the target) took their guesses.
    EXPECT_GT(m.spec_proposed_ahead, 0);
    EXPECT_GT(m.spec_used_ahead, 0);
    EXPECT_LE(m.spec_used_ahead, m.spec_proposed_ahead);
    EXPECT_EQ(m.spec_draft_error, "");
  }
  EXPECT_EQ(m.num_free_blocks, m.num_blocks);
  EXPECT_EQ(engine.shutdown(ShutdownMode::drain), 0);
}

INSTANTIATE_TEST_SUITE_P(Methods, EngineSpeculation,
                         ::testing::Values(SpeculativeMethod::ngram,
                                           SpeculativeMethod::draft_model));

}  // namespace
}  // namespace hive
