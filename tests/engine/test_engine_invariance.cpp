// Batching invariance on the fixture checkpoints and the bundled models: 32 prompts of mixed
// lengths (half of them behind one shared 3-block prefix; some sampled with seeds, some with n = 2,
// a third with penalties, min-p and logprobs) must give token-for-token identical outputs, and
// logits and logprobs with the same bits, whether each request runs alone or all run together:
// under chunk budgets of 16, 64 and 512 tokens, with prefix caching on or off, and in a KV pool so
// small that sequences are preempted both by swapping and by recomputation. Every engine is
// checked for leaked blocks when it is done.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <utility>

#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/cpu_features.hpp"
#include "runtime/engine/llm_engine.hpp"
#include "tests/common/cpu_paths.hpp"
#include "tests/common/model_dirs.hpp"
#include "tests/common/random.hpp"

namespace hive {
namespace {

using test::model_dir;
constexpr int32_t kBlockSize = 16;
constexpr int kNumPrompts = 32;

std::vector<Request> make_requests(int64_t vocab) {
  std::mt19937_64 rng(test::test_seed());
  std::uniform_int_distribution<int32_t> token(3, static_cast<int32_t>(vocab) - 1);
  const auto random_tokens = [&](int64_t n) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (int32_t& id : ids) id = token(rng);
    return ids;
  };
  const std::vector<int32_t> shared_prefix = random_tokens(3 * kBlockSize);
  const int64_t lengths[] = {1, 2, 15, 16, 17, 31, 33, 47, 64, 80, 100};
  std::vector<Request> requests;
  for (int i = 0; i < kNumPrompts; ++i) {
    Request r;
    r.id = str_cat("p", i);
    if (i % 2 == 0) {
      r.prompt_token_ids = shared_prefix;
      const auto suffix = random_tokens(1 + (i * 5) % 40);
      r.prompt_token_ids.insert(r.prompt_token_ids.end(), suffix.begin(), suffix.end());
    } else {
      r.prompt_token_ids = random_tokens(lengths[(i / 2) % 11]);
    }
    r.stop.max_tokens = 1 + (i * 7) % 24;
    r.stop.ignore_eos = i % 3 == 0;
    if (i % 5 == 0) r.sampling = {0.8f, 40, 0.95f, static_cast<uint64_t>(1000 + i)};
    if (i % 8 == 3) {
      r.n = 2;
      r.sampling = {1.0f, 0, 1.0f, static_cast<uint64_t>(2000 + i)};
    }
    if (i % 3 == 1) {
      // Penalties read the whole sequence, prompt included: under prefix
      // hits, preemption and forks the runner must still count it all.
      r.sampling.presence_penalty = 0.4f;
      r.sampling.frequency_penalty = 0.3f;
      r.sampling.repetition_penalty = 1.3f;
      r.sampling.min_p = 0.05f;
      r.sampling.logprobs = 3;
    }
    r.return_logits = true;
    requests.push_back(std::move(r));
  }
  return requests;
}

struct EngineSetup {
  int64_t budget_tokens = 512;
  int32_t num_blocks = 256;  // including the null block
  int32_t num_host_blocks = 0;
  bool prefix_caching = false;
  int speculative_tokens = 0;  // γ of n-gram speculation; 0: off
  std::string draft_model = {};  // with speculative_tokens: this fixture drafts, not n-grams
  DType kv_cache_dtype = kDefaultKVCacheDType;
};

// Runs the requests on one engine (all at once, or one after another) and
// checks that every block came back.
std::vector<RequestOutput> run(Model& model, const EngineSetup& setup,
                               std::vector<Request> requests, bool one_at_a_time,
                               EngineStats* stats = nullptr) {
  EngineConfig config;
  config.block_size = kBlockSize;
  config.kv_cache_dtype = setup.kv_cache_dtype;
  const int64_t block_bytes = kv_bytes_per_block(model.config(), kBlockSize, config.kv_cache_dtype);
  config.kv_budget.bytes = setup.num_blocks * block_bytes;
  config.swap_space_bytes = setup.num_host_blocks * block_bytes;
  config.enable_prefix_caching = setup.prefix_caching;
  config.scheduler.max_num_batched_tokens = setup.budget_tokens;
  config.scheduler.max_num_seqs = 2 * kNumPrompts;
  // The mechanics, not the control: drafts whenever there are any.
  config.speculative.adaptive = false;
  if (setup.speculative_tokens > 0) {
    config.speculative.method = SpeculativeMethod::ngram;
    config.speculative.num_speculative_tokens = setup.speculative_tokens;
  }
  if (!setup.draft_model.empty()) {
    config.speculative.method = SpeculativeMethod::draft_model;
    config.speculative.draft_model = model_dir(setup.draft_model);
  }
  LLMEngine engine(model, config);
  std::vector<RequestOutput> outputs;
  if (one_at_a_time) {
    for (Request& r : requests) outputs.push_back(engine.generate({std::move(r)}).front());
  } else {
    outputs = engine.generate(std::move(requests));
  }
  const BlockPool& device = engine.kv_cache_manager().device_pool();
  EXPECT_EQ(device.num_free_blocks(), device.num_allocatable_blocks()) << "device blocks leaked";
  if (const BlockPool* host = engine.kv_cache_manager().host_pool()) {
    EXPECT_EQ(host->num_free_blocks(), host->num_allocatable_blocks()) << "host blocks leaked";
  }
  if (const DraftModelDrafter* drafter = engine.drafter()) {
    EXPECT_EQ(drafter->num_sequences(), 0u) << "the drafter kept state of finished sequences";
    const BlockPool& pool = drafter->kv_cache().device_pool();
    EXPECT_EQ(pool.num_free_blocks(), pool.num_allocatable_blocks()) << "draft blocks leaked";
  }
  if (stats) *stats = engine.stats();
  return outputs;
}

// The same tokens and the same bits: the README promises every output
// batch- and thread-invariant, and the kernels' contract (docs/design/
// kernels.md) is one reduction order per output, so logits and logprobs are
// compared bit for bit, not within a tolerance (the largest difference is
// printed too, to show how far a broken order strays).
bool same_bits(float a, float b) {
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

void expect_same(const std::vector<RequestOutput>& expected,
                 const std::vector<RequestOutput>& got) {
  ASSERT_EQ(got.size(), expected.size());
  double max_diff = 0;
  int64_t logits_differing = 0, logits_compared = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].samples.size(), expected[i].samples.size()) << got[i].request_id;
    for (size_t k = 0; k < got[i].samples.size(); ++k) {
      const SequenceOutput &a = expected[i].samples[k], &b = got[i].samples[k];
      SCOPED_TRACE(testing::Message() << a.request_id << " sample " << k);
      EXPECT_EQ(b.token_ids, a.token_ids);
      EXPECT_EQ(b.finish_reason, a.finish_reason);
      ASSERT_EQ(b.logits.size(), a.logits.size());
      for (size_t t = 0; t < a.logits.size(); ++t) {
        ASSERT_EQ(b.logits[t].size(), a.logits[t].size()) << "token " << t;
        for (size_t v = 0; v < a.logits[t].size(); ++v) {
          ++logits_compared;
          logits_differing += same_bits(a.logits[t][v], b.logits[t][v]) ? 0 : 1;
          max_diff = std::max(max_diff, std::abs(double{a.logits[t][v]} - b.logits[t][v]));
        }
      }
      ASSERT_EQ(b.logprobs.size(), a.logprobs.size());
      for (size_t t = 0; t < a.logprobs.size(); ++t) {
        const TokenLogprobs &x = a.logprobs[t], &y = b.logprobs[t];
        EXPECT_TRUE(same_bits(y.logprob, x.logprob))
            << "token " << t << ": logprob " << y.logprob << " != " << x.logprob;
        EXPECT_EQ(y.top_token_ids, x.top_token_ids) << "token " << t;
        ASSERT_EQ(y.top_logprobs.size(), x.top_logprobs.size()) << "token " << t;
        for (size_t r = 0; r < x.top_logprobs.size(); ++r)
          EXPECT_TRUE(same_bits(y.top_logprobs[r], x.top_logprobs[r]))
              << "token " << t << ", top " << r;
      }
    }
  }
  EXPECT_EQ(logits_differing, 0) << "of " << logits_compared
                                 << " logits differ in their bits; max |difference| "
                                 << max_diff;
  ::testing::Test::RecordProperty("max_logits_difference", std::to_string(max_diff));
}

class EngineInvariance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    model = std::make_unique<Model>(model_dir(GetParam()), cpu);
    requests = make_requests(model->config().vocab_size);
    // Each request alone, once per model for all the tests.
    // Keyed by the matmul precision too (Bf16MatmulInvariance below).
    static std::map<std::string, std::vector<RequestOutput>> cache;
    const std::string key =
        GetParam() + "/" + std::string(cpu::matmul_precision_name(cpu::matmul_precision()));
    if (!cache.count(key)) cache[key] = run(*model, EngineSetup{}, requests, true);
    alone = cache[key];
  }
  // The outputs of the greedy requests: speculation keeps those exactly (a
  // sampled one follows another stream of draws).
  std::vector<RequestOutput> only_greedy(const std::vector<RequestOutput>& all) const {
    std::vector<RequestOutput> out;
    for (size_t i = 0; i < requests.size(); ++i)
      if (requests[i].sampling.temperature == 0.0f) out.push_back(all.at(i));
    return out;
  }

  CpuBackend cpu;
  std::unique_ptr<Model> model;
  std::vector<Request> requests;
  std::vector<RequestOutput> alone;
};

TEST_P(EngineInvariance, AllTogetherUnderChunkBudgets) {
  SCOPED_TRACE(testing::Message() << GetParam() << ", seed " << test::test_seed());
  for (const int64_t budget : {16, 64, 512}) {
    SCOPED_TRACE(testing::Message() << "max_num_batched_tokens " << budget);
    EngineStats stats;
    expect_same(alone, run(*model, {budget, 256, 0, false}, requests, false, &stats));
    EXPECT_GT(stats.scheduler.max_num_running, 1);
  }
}

TEST_P(EngineInvariance, PrefixCachingOnAndOff) {
  SCOPED_TRACE(testing::Message() << GetParam() << ", seed " << test::test_seed());
  for (const bool caching : {false, true}) {
    EngineStats stats;
    expect_same(alone, run(*model, {64, 256, 0, caching}, requests, false, &stats));
    if (caching) {
      EXPECT_GE(stats.kv_cache.prefix_hit_tokens, 3 * kBlockSize) << "the shared prefix never hit";
    } else {
      EXPECT_EQ(stats.kv_cache.prefix_hit_tokens, 0);
    }
  }
}

TEST_P(EngineInvariance, TinyPoolPreemptsBySwapAndByRecompute) {
  SCOPED_TRACE(testing::Message() << GetParam() << ", seed " << test::test_seed());
  EngineStats stats;
  // 11 blocks hold the longest request (prompt + max_tokens <= 124 tokens,
  // 8 blocks) but not the crowd; 2 host blocks take a few swapped sequences.
  expect_same(alone, run(*model, {64, 12, 3, true}, requests, false, &stats));
  EXPECT_GT(stats.scheduler.num_preemptions_swap, 0);
  EXPECT_GT(stats.scheduler.num_preemptions_recompute, 0);
  EXPECT_GT(stats.scheduler.num_tokens_recomputed, 0);
  EXPECT_GT(stats.bytes_swapped(), 0);
  ::testing::Test::RecordProperty("preemptions_swap",
                                  std::to_string(stats.scheduler.num_preemptions_swap));
  ::testing::Test::RecordProperty("preemptions_recompute",
                                  std::to_string(stats.scheduler.num_preemptions_recompute));
  std::printf(
      "[ %s ] preemptions: %lld by swap, %lld by recompute (%lld tokens recomputed, "
      "%lld bytes swapped), %lld copy-on-write blocks\n",
      GetParam().c_str(), static_cast<long long>(stats.scheduler.num_preemptions_swap),
      static_cast<long long>(stats.scheduler.num_preemptions_recompute),
      static_cast<long long>(stats.scheduler.num_tokens_recomputed),
      static_cast<long long>(stats.bytes_swapped()),
      static_cast<long long>(stats.kv_cache.copy_on_write_blocks));
}

// Copy-on-write against an independent oracle: sample k of an n = 2 request
// must equal a plain request (no shared blocks) drawing with seed + k.
TEST_P(EngineInvariance, ParallelSamplesMatchIndependentRequests) {
  SCOPED_TRACE(testing::Message() << GetParam() << ", seed " << test::test_seed());
  std::vector<Request> independent;
  std::vector<RequestOutput> forked;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].n == 1) continue;
    forked.push_back(alone[i]);
    for (int k = 0; k < requests[i].n; ++k) {
      Request r = requests[i];
      r.id += str_cat("/", k);
      r.n = 1;
      r.sampling.seed = r.sampling.seed.value_or(0) + static_cast<uint64_t>(k);
      independent.push_back(std::move(r));
    }
  }
  ASSERT_FALSE(forked.empty());
  const std::vector<RequestOutput> plain = run(*model, {}, independent, false);
  std::vector<RequestOutput> regrouped;
  for (size_t i = 0, next = 0; i < forked.size(); ++i) {
    regrouped.push_back({forked[i].request_id, {}});
    for (size_t k = 0; k < forked[i].samples.size(); ++k)
      regrouped.back().samples.push_back(plain[next++].samples.at(0));
  }
  expect_same(forked, regrouped);
  bool samples_differ = false;
  for (const RequestOutput& r : forked)
    samples_differ |= r.samples[0].token_ids != r.samples[1].token_ids;
  EXPECT_TRUE(samples_differ) << "the samples of a request should not all be equal";
}

// The penalised requests' logprobs are the raw model's: log_softmax of the
// logits row returned with each token (computed here, in long double), not
// of the penalised or tempered row; the top 3 are the row's largest. And
// the penalties do act: without them some of these outputs change.
TEST_P(EngineInvariance, PenalisedRequestsReturnRawLogprobsAndDiffer) {
  SCOPED_TRACE(testing::Message() << GetParam() << ", seed " << test::test_seed());
  std::vector<Request> unpenalised;
  int64_t checked = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!requests[i].sampling.logprobs) continue;
    for (const SequenceOutput& out : alone[i].samples) {
      ASSERT_EQ(out.logprobs.size(), out.token_ids.size()) << out.request_id;
      for (size_t t = 0; t < out.token_ids.size(); ++t) {
        const std::vector<float>& row = out.logits.at(t);
        long double total = 0;
        for (const float l : row) total += std::exp(static_cast<long double>(l));
        const auto log_softmax = [&](int32_t id) {
          return static_cast<double>(
              std::log(std::exp(static_cast<long double>(row[static_cast<size_t>(id)])) / total));
        };
        const TokenLogprobs& got = out.logprobs[t];
        EXPECT_NEAR(got.logprob, log_softmax(out.token_ids[t]), 1e-5);
        std::vector<int32_t> order(row.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](int32_t a, int32_t b) { return row[size_t(a)] > row[size_t(b)]; });
        order.resize(3);
        EXPECT_EQ(got.top_token_ids, order) << out.request_id << " token " << t;
        for (size_t k = 0; k < got.top_token_ids.size(); ++k)
          EXPECT_NEAR(got.top_logprobs[k], log_softmax(got.top_token_ids[k]), 1e-5);
        ++checked;
      }
    }
    Request r = requests[i];
    r.sampling.presence_penalty = r.sampling.frequency_penalty = 0.0f;
    r.sampling.repetition_penalty = 1.0f;
    unpenalised.push_back(std::move(r));
  }
  EXPECT_GT(checked, 20);
  const std::vector<RequestOutput> plain = run(*model, {}, unpenalised, false);
  int changed = 0;
  for (size_t i = 0, next = 0; i < requests.size(); ++i)
    if (requests[i].sampling.logprobs)
      changed += plain[next++].samples[0].token_ids != alone[i].samples[0].token_ids;
  EXPECT_GT(changed, 0) << "the penalties changed no output";
}

// generate() takes a batch whole or not at all: a bad request leaves none of
// the others queued, so the same ids can be submitted again.
TEST(LLMEngineBatch, ABadRequestLeavesNothingQueued) {
  CpuBackend cpu;
  Model model(model_dir("qwen2"), cpu);
  LLMEngine engine(model, EngineConfig{});
  Request good;
  good.id = "good";
  good.prompt_token_ids = {3, 4, 5};
  good.stop.max_tokens = 4;
  Request bad = good;
  bad.id = "bad";
  bad.prompt_token_ids = {3, static_cast<int32_t>(model.config().vocab_size)};
  EXPECT_THROW(engine.generate({good, bad}), Error);
  EXPECT_FALSE(engine.has_unfinished());
  const std::vector<RequestOutput> again = engine.generate({good});
  ASSERT_EQ(again.size(), 1u);
  ASSERT_EQ(again[0].samples.size(), 1u);
  EXPECT_EQ(again[0].samples[0].token_ids,
            LLMEngine(model, EngineConfig{}).generate({good}).at(0).samples.at(0).token_ids);
  // generate() returns only its own requests, so it refuses to run over
  // others still unfinished (their outputs would be lost).
  engine.add_request(good);
  Request other = good;
  other.id = "other";
  EXPECT_THROW(engine.generate({other}), Error);
  std::vector<SequenceOutput> finished;
  while (engine.has_unfinished())
    for (SequenceOutput& out : engine.step()) finished.push_back(std::move(out));
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].request_id, "good");
}

// The CPU backend, with a switch that makes the next forward pass fail.
class FailingBackend : public CpuBackend {
 public:
  bool fail_next = false;
  void embedding(const Tensor& table, const Tensor& ids, const Tensor& out) override {
    if (std::exchange(fail_next, false)) fail("injected backend failure");
    CpuBackend::embedding(table, ids, out);
  }
};

// A step that throws leaves the engine as if the step had not run: stepping
// on finishes every request with the tokens of a run without the failure
// (the cache, with the blocks the failed step never wrote, is emptied).
TEST(LLMEngineFaults, AFailedStepIsComputedAgainAndGenerateFailsWhole) {
  FailingBackend backend;
  Model model(model_dir("qwen3_moe"), backend);
  EngineConfig config;
  config.block_size = 4;
  config.enable_prefix_caching = true;
  std::vector<Request> requests(2);
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].id = str_cat("r", i);
    requests[i].prompt_token_ids = {3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    requests[i].stop.max_tokens = 6;
    requests[i].stop.ignore_eos = true;
  }
  requests[1].n = 2;  // the failed step is the one that forks its samples
  requests[1].sampling = {1.0f, 0, 1.0f, uint64_t{77}};
  CpuBackend cpu;
  Model reference_model(model_dir("qwen3_moe"), cpu);
  const std::vector<RequestOutput> want = LLMEngine(reference_model, config).generate(requests);

  LLMEngine engine(model, config);
  for (const Request& r : requests) engine.add_request(r);
  backend.fail_next = true;
  EXPECT_THROW(engine.step(), Error);
  std::map<std::string, std::vector<SequenceOutput>> done;
  for (int i = 0; i < 100 && engine.has_unfinished(); ++i)
    for (SequenceOutput& out : engine.step()) done[out.request_id].push_back(std::move(out));
  ASSERT_FALSE(engine.has_unfinished());
  for (const RequestOutput& r : want) {
    std::vector<SequenceOutput>& got = done[r.request_id];
    ASSERT_EQ(got.size(), r.samples.size()) << r.request_id;
    std::sort(got.begin(), got.end(),
              [](const auto& a, const auto& b) { return a.sample_index < b.sample_index; });
    for (size_t s = 0; s < got.size(); ++s)
      EXPECT_EQ(got[s].token_ids, r.samples[s].token_ids) << r.request_id << " sample " << s;
  }
  // The same prompt again hits the blocks computed after the failure.
  const int64_t hits = engine.stats().kv_cache.prefix_hit_tokens;
  EXPECT_EQ(engine.generate({requests[0]}).at(0).samples.at(0).token_ids,
            want[0].samples[0].token_ids);
  EXPECT_EQ(engine.stats().kv_cache.prefix_hit_tokens - hits, 8);  // 2 of its 3 blocks
  // generate() fails whole: nothing stays queued, and it can run again.
  backend.fail_next = true;
  EXPECT_THROW(engine.generate(requests), Error);
  EXPECT_FALSE(engine.has_unfinished());
  const std::vector<RequestOutput> again = engine.generate(requests);
  for (size_t i = 0; i < want.size(); ++i)
    for (size_t s = 0; s < want[i].samples.size(); ++s)
      EXPECT_EQ(again[i].samples.at(s).token_ids, want[i].samples[s].token_ids);
}

// A runner replaced mid-stream (a failed step) knows nothing of the
// sequence: its next sample carries the whole history again, so a penalised,
// seeded request ends as a run without the failure does.
TEST(LLMEngineFaults, AFreshRunnerMidStreamCountsTheWholeHistoryAgain) {
  FailingBackend backend;
  Model model(model_dir("qwen3_moe"), backend);
  EngineConfig config;
  config.block_size = 4;
  Request r;
  r.id = "r";
  r.prompt_token_ids = {3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  r.stop.max_tokens = 12;
  r.stop.ignore_eos = true;
  r.sampling = {0.8f, 0, 1.0f, uint64_t{5}};
  r.sampling.presence_penalty = 0.5f;
  r.sampling.frequency_penalty = 0.5f;
  r.sampling.repetition_penalty = 1.5f;
  CpuBackend cpu;
  Model reference_model(model_dir("qwen3_moe"), cpu);
  const std::vector<int32_t> want =
      LLMEngine(reference_model, config).generate({r}).at(0).samples.at(0).token_ids;
  for (const int fail_at : {2, 7}) {
    LLMEngine engine(model, config);
    engine.add_request(r);
    std::vector<SequenceOutput> done;
    for (int step = 0; engine.has_unfinished() && step < 100; ++step) {
      backend.fail_next = step == fail_at;
      try {
        for (SequenceOutput& out : engine.step()) done.push_back(std::move(out));
      } catch (const Error&) {
        EXPECT_EQ(step, fail_at);
      }
    }
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].token_ids, want) << "failed at step " << fail_at;
  }
}

// Speculation (n-gram drafts, γ = 4) keeps every greedy output, penalised
// ones and n = 2 included: alone, all together, with prefix caching, and in
// a pool so small that sequences with drafts in flight are preempted. The
// sampled requests speculate too (their outputs follow another stream of
// draws, so they are not compared). Drafts must have been planned, or the
// test proves nothing; whether a random model ever repeats itself enough
// for one to be accepted depends on the seed (the draft-model test below
// accepts most of its drafts, and rejects most of another model's).
TEST_P(EngineInvariance, SpeculationKeepsGreedyOutputs) {
  SCOPED_TRACE(testing::Message() << GetParam() << ", seed " << test::test_seed());
  const std::vector<RequestOutput> expected = only_greedy(alone);
  SpecDecodeStats total;
  for (const auto& [setup, one_at_a_time] :
       {std::pair{EngineSetup{512, 256, 0, false, 4}, true},
        std::pair{EngineSetup{512, 256, 0, true, 4}, false},
        std::pair{EngineSetup{64, 12, 3, true, 4}, false}}) {
    SCOPED_TRACE(testing::Message() << "budget " << setup.budget_tokens << ", "
                                    << setup.num_blocks << " blocks, prefix caching "
                                    << setup.prefix_caching << ", alone " << one_at_a_time);
    EngineStats stats;
    expect_same(expected, only_greedy(run(*model, setup, requests, one_at_a_time, &stats)));
    const SpecDecodeStats& spec = stats.scheduler.spec_decode;
    total.num_draft_tokens += spec.num_draft_tokens;
    total.num_accepted_tokens += spec.num_accepted_tokens;
  }
  EXPECT_GT(total.num_draft_tokens, 0) << "no draft was ever planned";
  std::printf("[ %s ] speculation: %lld of %lld draft tokens accepted\n", GetParam().c_str(),
              static_cast<long long>(total.num_accepted_tokens),
              static_cast<long long>(total.num_draft_tokens));
}

// A draft model keeps them too: the target itself as its own draft (most
// drafts accepted) and another model (most rejected), batched with prefix
// caching and in the tiny pool.
TEST_P(EngineInvariance, DraftModelSpeculationKeepsGreedyOutputs) {
  SCOPED_TRACE(testing::Message() << GetParam() << ", seed " << test::test_seed());
  const std::vector<RequestOutput> expected = only_greedy(alone);
  const bool bundled = GetParam().rfind("bundled/", 0) == 0;
  const std::string other = bundled ? (GetParam() == "bundled/hive-draft" ? "bundled/hive-moe-target"
                                                                          : "bundled/hive-draft")
                                    : (GetParam() == "qwen3" ? "llama" : "qwen3");
  SpecDecodeStats total;
  for (const std::string& draft : {GetParam(), other}) {
    for (const EngineSetup& setup : {EngineSetup{512, 256, 0, true, 4, draft},
                                     EngineSetup{64, 12, 3, true, 3, draft}}) {
      SCOPED_TRACE(testing::Message() << "draft " << draft << ", " << setup.num_blocks
                                      << " blocks");
      EngineStats stats;
      expect_same(expected, only_greedy(run(*model, setup, requests, false, &stats)));
      total.num_draft_tokens += stats.scheduler.spec_decode.num_draft_tokens;
      total.num_accepted_tokens += stats.scheduler.spec_decode.num_accepted_tokens;
    }
  }
  EXPECT_GT(total.num_accepted_tokens, 0) << "no draft token was ever accepted";
  EXPECT_LT(total.num_accepted_tokens, total.num_draft_tokens) << "no draft token was rejected";
  std::printf("[ %s ] draft-model speculation: %lld of %lld draft tokens accepted\n",
              GetParam().c_str(), static_cast<long long>(total.num_accepted_tokens),
              static_cast<long long>(total.num_draft_tokens));
}

// The bf16 matmul mode (kernels/cpu/cpu_features.hpp; the default) keeps the
// invariance: its order is fixed per output too. On the models with bf16
// weights, where it applies, and on kernel paths with AVX512_BF16, where it
// runs (not on a machine without it, nor under HIVE_CPU_ISA=avx2). The whole
// program runs in the bf16 mode too (engine_invariance_tests_bf16, release
// tree only); this suite keeps the mode covered in the sanitizer trees.
class Bf16MatmulInvariance : public EngineInvariance {
 protected:
  void SetUp() override {
    HIVE_SKIP_WITHOUT_CPU_PATH(cpu::CpuPath::avx512_bf16);
    if (cpu::cpu_kernel_path() < cpu::CpuPath::avx512_bf16)
      GTEST_SKIP() << "HIVE_CPU_ISA caps the kernel path below avx512_bf16";
    saved_ = cpu::matmul_precision();
    cpu::set_matmul_precision(cpu::MatmulPrecision::bf16);
    ASSERT_TRUE(cpu::bf16_matmul_active());
    EngineInvariance::SetUp();
  }
  void TearDown() override { cpu::set_matmul_precision(saved_); }

 private:
  cpu::MatmulPrecision saved_ = cpu::MatmulPrecision::f32;
};

TEST_P(Bf16MatmulInvariance, TogetherChunkedPrefixCachedAndPreempted) {
  SCOPED_TRACE(testing::Message() << GetParam() << ", seed " << test::test_seed());
  for (const int64_t budget : {16, 512}) {
    SCOPED_TRACE(testing::Message() << "max_num_batched_tokens " << budget);
    expect_same(alone, run(*model, {budget, 256, 0, true}, requests, false));
  }
  EngineStats stats;
  expect_same(alone, run(*model, {64, 12, 3, true}, requests, false, &stats));
  EXPECT_GT(stats.scheduler.num_preemptions_swap + stats.scheduler.num_preemptions_recompute, 0);
}

// A quantized KV cache (int8, fp8: kernels/kv_quant.hpp) keeps the
// invariance within its dtype: a row is quantized once, by itself, whichever
// step writes it, and copies and swaps move its scale with it. Each request
// alone against all together in chunks of 16 with prefix caching, and in
// the tiny pool that preempts by swap and by recompute. On models with
// plain attention (an MLA model refuses a quantized cache).
class QuantizedKVInvariance : public ::testing::TestWithParam<std::string> {
 protected:
  CpuBackend cpu;
};

TEST_P(QuantizedKVInvariance, TogetherChunkedPrefixCachedAndPreempted) {
  SCOPED_TRACE(testing::Message() << GetParam() << ", seed " << test::test_seed());
  Model model(model_dir(GetParam()), cpu);
  const std::vector<Request> requests = make_requests(model.config().vocab_size);
  for (const DType dtype : {DType::i8, DType::f8_e4m3}) {
    SCOPED_TRACE(dtype_name(dtype));
    EngineSetup setup;
    setup.kv_cache_dtype = dtype;
    const std::vector<RequestOutput> alone = run(model, setup, requests, true);
    setup.budget_tokens = 16;
    setup.prefix_caching = true;
    EngineStats stats;
    expect_same(alone, run(model, setup, requests, false, &stats));
    EXPECT_GE(stats.kv_cache.prefix_hit_tokens, 3 * kBlockSize) << "the shared prefix never hit";
    setup.budget_tokens = 64;
    setup.num_blocks = 12;
    setup.num_host_blocks = 3;
    expect_same(alone, run(model, setup, requests, false, &stats));
    EXPECT_GT(stats.scheduler.num_preemptions_swap, 0);
    EXPECT_GT(stats.scheduler.num_preemptions_recompute, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(PlainAttentionModels, QuantizedKVInvariance,
                         ::testing::Values("qwen3_moe", "llama", "bundled/hive-draft"));

INSTANTIATE_TEST_SUITE_P(BundledBf16Models, Bf16MatmulInvariance,
                         ::testing::Values("bundled/hive-moe-target", "bundled/hive-draft"));

INSTANTIATE_TEST_SUITE_P(Fixtures, EngineInvariance,
                         ::testing::Values("mistral", "qwen3_moe", "llama", "qwen2", "qwen3",
                                           "mixtral", "qwen2_moe", "bundled/hive-moe-target",
                                           "bundled/hive-draft", "deepseek_v3", "deepseek_v3_yarn",
                                           "deepseek_v2", "deepseek_v2_lite"));

}  // namespace
}  // namespace hive
