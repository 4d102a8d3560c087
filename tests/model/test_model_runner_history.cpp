// The model runner's penalty history when a slot's TokenHistory was made
// while the sequence's last token was pending (the scheduler does not make
// such a slot today: a preempted sequence is re-admitted only after its
// pending token came back; the runner still counts that token, its own
// sample, so the counts stay right if that changes).
#include <gtest/gtest.h>

#include "kernels/cpu/cpu_backend.hpp"
#include "runtime/model/model_runner.hpp"
#include "tests/common/model_dirs.hpp"

namespace hive {
namespace {

TEST(ModelRunnerHistory, APendingTokenBeforeAHistorySlotIsCounted) {
  CpuBackend cpu;
  Model model(test::model_dir("qwen3_moe"), cpu);
  SamplingParams params;  // greedy, encouraging repeats: x's logit gains 4
  params.presence_penalty = -2.0f;
  params.frequency_penalty = -2.0f;
  const std::vector<int32_t> prompt = {3, 4, 5, 6, 7};
  const auto plan = [&](std::vector<int32_t> ids, TokenHistory history, int64_t num_sampled) {
    StepPlan p;
    p.sequences.push_back({0, 0, std::move(ids), 0, {1, 2}, true});  // the whole table each time
    p.samples.push_back({0, 0, params, false, num_sampled, std::move(history)});
    return p;
  };
  const auto second_token = [&](std::vector<int32_t> ids, TokenHistory history) {
    PagedKVCache cache(cpu, model.config(), 4, 4);
    ModelRunner runner(model, cache);
    const int32_t x = runner.run(plan(prompt, {prompt, {}}, 0)).at(0).token;
    return std::pair{x, runner.run(plan(std::move(ids), std::move(history), 1)).at(0).token};
  };
  std::vector<int32_t> run = prompt;
  run.push_back(kPendingToken);
  // The history lacks the pending token x; the runner adds it.
  const auto [x, pending] = second_token(run, {prompt, {}});
  run.back() = x;
  EXPECT_EQ(pending, second_token(run, {prompt, {x}}).second);
  // The test can tell: without x in the history the token differs.
  EXPECT_NE(pending, second_token(run, {prompt, {}}).second) << "x = " << x;
}

}  // namespace
}  // namespace hive
