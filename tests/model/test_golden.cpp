// Whole models against transformers: every architecture's fixture checkpoint
// (tools/make_golden.py; deepseek_v3_fp8, an FP8 checkpoint against
// transformers on its dequantized weights, tools/make_fp8_fixture.py) is run with an incremental
// paged KV cache, the prompt in one prefill and then token by token; the logits of every position
// must be within 1e-4 of transformers' (relative to the largest logit) and the greedy continuation
// identical. The block table runs backwards through the pool, so logical and physical positions
// never coincide. golden_tests_bf16 runs the same in the bf16 matmul mode, held to its own
// bounds (kBf16ModeNmse, kBf16ModeTieGap).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/cpu_features.hpp"
#include "runtime/engine/llm_engine.hpp"
#include "runtime/model/model.hpp"
#include "runtime/model/sampling.hpp"

namespace hive {
namespace {

const std::filesystem::path kModels = std::filesystem::path(HIVE_TEST_DATA) / "models";
constexpr int32_t kBlockSize = 4;
// bf16 KV: each cached K and V value is rounded to 8 mantissa bits (a
// relative 2^-9, 2e-3). The largest logit error measured over the 14
// fixture prompts was 5.2e-3 (llama, prompt 0); the bound is twice that.
constexpr double kBf16KVTolerance = 1e-2;
// The bf16 mode (tests/CMakeLists.txt runs golden_tests_bf16 in it) rounds
// the activations of every matmul with bf16 weights (llama, mixtral,
// deepseek_v3_yarn, deepseek_v2_lite and deepseek_v3_fp8 hold some) to bf16.
// Measured on this project's AMX machine (2026-12): the NMSE of a prompt's
// logits, its worst position left out (RowErrors), at most 4.4e-4 (mixtral
// prompt 1 in the engine, after its router's near tie; 8.8e-5 elsewhere);
// greedy picks broken the other way on 3 prompts, the largest gap in
// transformers' logits 0.0095 of a largest logit 3.47 (2.7e-3). The bounds
// are about twice those. The exact mode stays at 1e-4 and exact tokens.
constexpr double kBf16ModeNmse = 1e-3;
constexpr double kBf16ModeTieGap = 6e-3;

struct Golden {
  std::vector<int32_t> prompt, greedy;
  Tensor logits;  // [prompt + greedy, vocab]
};

std::vector<int32_t> ints(const Tensor& t) {
  return {t.as<int32_t>(), t.as<int32_t>() + t.numel()};
}

class GoldenTest : public ::testing::TestWithParam<std::string> {};

// How near transformers' logits must be: in the exact mode the largest
// difference relative to the largest logit, greedy tokens identical; in the
// bf16 mode (max_nmse set) the normalised squared error over every logit,
// and a greedy token may differ only where transformers' own logit for it is
// within max_tie_gap (relative to the largest logit) of its best: a near tie
// that bf16's rounding may break either way.
struct Bounds {
  double max_relative_error = 0;
  double max_nmse = 0;
  double max_tie_gap = 0;
};

// The exact mode's bounds, or the bf16 mode's where its matmul runs
// (golden_tests_bf16, on a CPU with vdpbf16ps).
Bounds mode_bounds(Bounds exact) {
  return cpu::bf16_matmul_active() ? Bounds{0, kBf16ModeNmse, kBf16ModeTieGap} : exact;
}

// The NMSE of logits rows against transformers', all rows but the worst:
// where a router's two best experts nearly tie, bf16's rounding may send one
// token to the other expert (mixtral prompt 1, position 15: NMSE 0.24 there,
// at most 1.6e-3 at the later positions that attend to it).
class RowErrors {
 public:
  void add(const float* got, const float* want, int64_t n) {
    double error = 0, norm = 0;
    for (int64_t v = 0; v < n; ++v) {
      error += (double{got[v]} - want[v]) * (double{got[v]} - want[v]);
      norm += double{want[v]} * want[v];
    }
    error_.push_back(error);
    norm_.push_back(norm);
  }
  double nmse_but_worst() const {
    size_t worst = 0;
    for (size_t r = 0; r < error_.size(); ++r)
      if (error_[r] / norm_[r] > error_[worst] / norm_[worst]) worst = r;
    double error = 0, norm = 0;
    for (size_t r = 0; r < error_.size(); ++r)
      if (r != worst || error_.size() == 1) error += error_[r], norm += norm_[r];
    return norm == 0 ? error : error / norm;
  }

 private:
  std::vector<double> error_, norm_;
};

double max_abs(const Tensor& t) {
  double largest = 0;
  for (int64_t j = 0; j < t.numel(); ++j)
    largest = std::max(largest, std::abs(double{t.as<float>()[j]}));
  return largest;
}

// Each greedy token of `generated` is transformers' (`greedy`) or within
// `max_gap` of it in transformers' logits at that position (`ref`, whose row
// p - 1 + step predicts token `step`).
void expect_near_ties_only(const std::vector<int32_t>& generated,
                           const std::vector<int32_t>& greedy, const Tensor& ref, int64_t p,
                           int64_t vocab, double max_gap) {
  ASSERT_EQ(generated.size(), greedy.size());
  for (size_t step = 0; step < greedy.size(); ++step) {
    if (generated[step] == greedy[step]) continue;
    const float* row = ref.as<float>() + (p - 1 + static_cast<int64_t>(step)) * vocab;
    const double gap = double{row[greedy[step]]} - row[generated[step]];
    std::printf("  step %zu: %d for transformers' %d, %.4g below it\n", step, generated[step],
                greedy[step], gap);
    EXPECT_LE(gap, max_gap) << "step " << step << ": " << generated[step] << " for transformers' "
                            << greedy[step];
  }
}

// Runs every golden prompt of the architecture with a KV cache of `kv_dtype`
// and checks the logits and the greedy tokens against transformers' within
// `bounds`.
void check_against_transformers(const std::string& name, DType kv_dtype, const Bounds& bounds) {
  const auto dir = kModels / name;
  CpuBackend cpu;
  Model model(dir, cpu);
  const SafetensorsFile golden(dir / "golden.safetensors");
  const auto& t = golden.tensors();
  const int64_t vocab = model.config().vocab_size;
  for (int i = 0; t.count("prompt_" + std::to_string(i)); ++i) {
    SCOPED_TRACE(testing::Message()
                 << name << " prompt " << i << " " << dtype_name(kv_dtype) << " KV");
    const auto prompt = ints(t.at("prompt_" + std::to_string(i)));
    const auto greedy = ints(t.at("greedy_" + std::to_string(i)));
    const Tensor& ref = t.at("logits_" + std::to_string(i));
    const auto total = static_cast<int64_t>(prompt.size() + greedy.size());
    ASSERT_EQ(ref.shape[0], total);
    ASSERT_EQ(ref.shape[1], vocab);

    std::vector<float> logits(static_cast<size_t>(total * vocab));
    const auto num_table_blocks = static_cast<int32_t>((total + kBlockSize - 1) / kBlockSize);
    PagedKVCache cache(cpu, model.config(), num_table_blocks + 1, kBlockSize, 0, kv_dtype);
    std::vector<int32_t> table(static_cast<size_t>(num_table_blocks));
    for (int32_t b = 0; b < num_table_blocks; ++b)
      table[static_cast<size_t>(b)] = num_table_blocks - b;
    const auto p = static_cast<int64_t>(prompt.size());
    ForwardBatch prefill;
    prefill.add_run(0, prompt, table, kBlockSize);
    for (int32_t row = 0; row < p; ++row) prefill.logits_rows.push_back(row);
    model.forward(prefill, cache, Tensor::view(logits.data(), DType::f32, {p, vocab}));
    std::vector<int32_t> generated;
    for (size_t step = 0; step < greedy.size(); ++step) {
      const float* row = logits.data() + (p + static_cast<int64_t>(step) - 1) * vocab;
      generated.push_back(argmax({row, static_cast<size_t>(vocab)}));
      // Feed the reference token so every position stays comparable.
      ForwardBatch decode;
      decode.add_run(p + static_cast<int64_t>(step), std::span(&greedy[step], 1), table,
                     kBlockSize);
      decode.logits_rows = {0};
      model.forward(decode, cache,
                    Tensor::view(logits.data() + (p + static_cast<int64_t>(step)) * vocab,
                                 DType::f32, {1, vocab}));
    }
    double max_ref = 0, max_diff = 0;
    for (int64_t j = 0; j < total * vocab; ++j) {
      max_ref = std::max(max_ref, std::abs(double{ref.as<float>()[j]}));
      max_diff =
          std::max(max_diff, std::abs(double{ref.as<float>()[j]} - logits[static_cast<size_t>(j)]));
    }
    RowErrors rows;
    for (int64_t r = 0; r < total; ++r)
      rows.add(logits.data() + r * vocab, ref.as<float>() + r * vocab, vocab);
    const double error = rows.nmse_but_worst();
    if (bounds.max_nmse == 0) {
      EXPECT_EQ(generated, greedy);
      EXPECT_LE(max_diff / max_ref, bounds.max_relative_error)
          << "max |diff| " << max_diff << ", max |ref| " << max_ref;
    } else {
      expect_near_ties_only(generated, greedy, ref, p, vocab, bounds.max_tie_gap * max_ref);
      EXPECT_LE(error, bounds.max_nmse);
    }
    std::printf("%s prompt %d, %s KV%s: relative error %.3g, NMSE %.3g\n", name.c_str(), i,
                std::string(dtype_name(kv_dtype)).c_str(),
                cpu::bf16_matmul_active() ? ", bf16 mode" : "", max_diff / max_ref, error);
  }
}

// f32 KV: the model's own arithmetic against transformers' (fp32).
TEST_P(GoldenTest, LogitsAndGreedyMatchTransformers) {
  check_against_transformers(GetParam(), DType::f32, mode_bounds({1e-4}));
}

// bf16 KV (the default): its own bound, measured (kBf16KVTolerance); the
// greedy tokens must still be transformers'.
TEST_P(GoldenTest, Bf16KVCacheStaysNearTransformers) {
  check_against_transformers(GetParam(), DType::bf16, mode_bounds({kBf16KVTolerance}));
}

// The offline engine end to end: all prompts together, prefill in chunks of 8
// tokens, blocks of 4 (a sliding window releases blocks), greedy sampling.
TEST_P(GoldenTest, OfflineEngineMatchesTransformers) {
  const auto dir = kModels / GetParam();
  CpuBackend cpu;
  Model model(dir, cpu);
  const SafetensorsFile golden(dir / "golden.safetensors");
  const auto& t = golden.tensors();
  const int64_t vocab = model.config().vocab_size;
  const Bounds bounds = mode_bounds({1e-4});
  EngineConfig config;
  config.block_size = kBlockSize;
  config.kv_cache_dtype = DType::f32;  // held to the f32 tolerance
  config.kv_budget.bytes = 64 * kv_bytes_per_block(model.config(), kBlockSize, DType::f32);
  config.scheduler.max_num_batched_tokens = 8;
  LLMEngine engine(model, config);
  std::vector<Request> requests;
  for (int i = 0; t.count("prompt_" + std::to_string(i)); ++i) {
    Request r;
    r.id = std::to_string(i);
    r.prompt_token_ids = ints(t.at("prompt_" + std::to_string(i)));
    r.stop.max_tokens = t.at("greedy_" + std::to_string(i)).numel();
    r.stop.ignore_eos = true;
    r.return_logits = true;
    requests.push_back(std::move(r));
  }
  const std::vector<RequestOutput> outputs = engine.generate(requests);
  ASSERT_EQ(outputs.size(), requests.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    SCOPED_TRACE(testing::Message() << GetParam() << " prompt " << i);
    const SequenceOutput& out = outputs[i].samples.at(0);
    const std::vector<int32_t> greedy = ints(t.at("greedy_" + std::to_string(i)));
    const Tensor& ref = t.at("logits_" + std::to_string(i));
    const auto p = static_cast<int64_t>(requests[i].prompt_token_ids.size());
    ASSERT_EQ(static_cast<int64_t>(out.logits.size()), requests[i].stop.max_tokens)
        << "one logits row per generated token";
    // The engine feeds its own tokens: after a near tie broken the other way
    // (the bf16 mode) the rest is another continuation, compared no further.
    size_t compared = greedy.size();
    if (bounds.max_nmse == 0) {
      EXPECT_EQ(out.token_ids, greedy);
    } else {
      compared = static_cast<size_t>(
          std::mismatch(greedy.begin(), greedy.end(), out.token_ids.begin()).first -
          greedy.begin());
      compared = std::min(compared + 1, greedy.size());
      expect_near_ties_only({out.token_ids.begin(), out.token_ids.begin() + compared},
                            {greedy.begin(), greedy.begin() + compared}, ref, p, vocab,
                            bounds.max_tie_gap * max_abs(ref));
    }
    double max_ref = 0, max_diff = 0;
    RowErrors rows;
    for (size_t step = 0; step < compared; ++step) {
      const float* row = ref.as<float>() + (p - 1 + static_cast<int64_t>(step)) * vocab;
      for (int64_t v = 0; v < vocab; ++v) {
        max_ref = std::max(max_ref, std::abs(double{row[v]}));
        max_diff =
            std::max(max_diff, std::abs(double{row[v]} - out.logits[step][static_cast<size_t>(v)]));
      }
      rows.add(out.logits[step].data(), row, vocab);
    }
    const double error = rows.nmse_but_worst();
    if (bounds.max_nmse == 0) {
      EXPECT_LE(max_diff / max_ref, bounds.max_relative_error)
          << "max |diff| " << max_diff << ", max |ref| " << max_ref;
    } else {
      EXPECT_LE(error, bounds.max_nmse) << "over the first " << compared << " tokens";
    }
    std::printf("%s prompt %zu, engine: relative error %.3g, NMSE %.3g over %zu tokens\n",
                GetParam().c_str(), i, max_diff / max_ref, error, compared);
  }
  const BlockPool& pool = engine.kv_cache_manager().device_pool();
  EXPECT_EQ(pool.num_free_blocks(), pool.num_allocatable_blocks());
}

// A hand-built batch must be whole: every token in exactly one run, with a
// position and a cache slot (a token outside the runs left its attention
// output unset and its logits garbage).
TEST(ModelForward, RejectsAnInconsistentBatch) {
  CpuBackend cpu;
  Model model(kModels / "qwen3", cpu);
  PagedKVCache cache(cpu, model.config(), 4, 4, 0);
  std::vector<float> logits(static_cast<size_t>(model.config().vocab_size));
  const Tensor out = Tensor::view(logits.data(), DType::f32, {1, model.config().vocab_size});
  const std::vector<int32_t> tokens = {3, 4, 5}, table = {1};
  const auto expect_error = [&](const ForwardBatch& batch, const std::string& needle) {
    try {
      model.forward(batch, cache, out);
      ADD_FAILURE() << "no error for: " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  ForwardBatch whole;
  whole.logits_rows.push_back(whole.add_run(0, tokens, table, 4));
  model.forward(whole, cache, out);  // the consistent batch runs
  ForwardBatch short_run = whole;
  short_run.runs[0].num_tokens = 2;
  expect_error(short_run, "the runs cover 2 of the 3 tokens");
  ForwardBatch few_slots = whole;
  few_slots.slot_mapping.pop_back();
  expect_error(few_slots, "3 tokens with 3 positions and 2 slots");
  ForwardBatch gap = whole;
  gap.runs[0].first_token = 1;
  expect_error(gap, "does not follow the previous ones");
}

INSTANTIATE_TEST_SUITE_P(Architectures, GoldenTest,
                         ::testing::Values("llama", "mistral", "qwen2", "qwen3", "mixtral",
                                           "qwen2_moe", "qwen3_moe", "deepseek_v3",
                                           "deepseek_v3_yarn", "deepseek_v2", "deepseek_v2_lite",
                                           "deepseek_v3_fp8"));

}  // namespace
}  // namespace hive
