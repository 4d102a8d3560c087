#pragma once
// A Scheduler over a KVCacheManager driven by a fake model: each sampled
// token comes from a function of the sequence (by default its length), so
// tests control outputs exactly. Teardown checks that no block leaked.
#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "base/error.hpp"
#include "runtime/core/block_tables.hpp"
#include "runtime/core/scheduler.hpp"

namespace hive::test {

class SchedulerFixture : public ::testing::Test {
 protected:
  void TearDown() override {
    EXPECT_FALSE(scheduler->has_unfinished()) << "a test left sequences unfinished";
    EXPECT_EQ(kv->device_pool().num_free_blocks(), kv->device_pool().num_allocatable_blocks())
        << "device blocks leaked";
    if (kv->host_pool()) {
      EXPECT_EQ(kv->host_pool()->num_free_blocks(), kv->host_pool()->num_allocatable_blocks())
          << "host blocks leaked";
    }
  }

  void make(const SchedulerConfig& config, const KVCacheConfig& kv_config) {
    kv = std::make_unique<KVCacheManager>(kv_config);
    SchedulerConfig with_eos = config;
    with_eos.eos_token_ids = {2};
    scheduler = std::make_unique<Scheduler>(with_eos, *kv);
    tables = BlockTables{};
  }

  static KVCacheConfig blocks(int32_t device, int32_t host = 0, bool prefix_caching = false) {
    KVCacheConfig c;
    c.block_size = 4;
    c.num_device_blocks = device;
    c.num_host_blocks = host;
    c.enable_prefix_caching = prefix_caching;
    return c;
  }

  static Request request(const std::string& id, int64_t prompt_len, int64_t max_tokens,
                         int32_t first_token = 10) {
    Request r;
    r.id = id;
    for (int64_t i = 0; i < prompt_len; ++i)
      r.prompt_token_ids.push_back(first_token + static_cast<int32_t>(i));
    r.stop.max_tokens = max_tokens;
    return r;
  }

  // One step: schedule, sample every slot with next_token, update. With
  // `ahead`, the update is the previous plan's, as under async scheduling:
  // each plan is made before the results of the one before come back.
  std::vector<SequenceOutput> step() {
    last_plan = schedule();
    std::vector<SampledToken> sampled;
    for (const SampleSlot& slot : last_plan.samples)
      sampled.push_back({slot.seq_id, next_token(scheduler->sequence(slot.seq_id)), {}, {}});
    in_flight.push_back(std::move(sampled));
    if (in_flight.size() < (ahead ? 2u : 1u)) return {};
    std::vector<SequenceOutput> finished = scheduler->update(in_flight.front());
    in_flight.pop_front();
    return finished;
  }

  std::vector<SequenceOutput> run_to_completion(int max_steps = 1000) {
    std::vector<SequenceOutput> outputs;
    for (int i = 0; i < max_steps && scheduler->has_unfinished(); ++i) {
      auto finished = step();
      outputs.insert(outputs.end(), finished.begin(), finished.end());
    }
    EXPECT_FALSE(scheduler->has_unfinished()) << "not done after " << max_steps << " steps";
    return outputs;
  }

  // (seq id, first position, token count) of each scheduled run.
  std::vector<std::tuple<SequenceId, int64_t, size_t>> runs() const {
    std::vector<std::tuple<SequenceId, int64_t, size_t>> out;
    for (const ScheduledSequence& s : last_plan.sequences)
      out.emplace_back(s.seq_id, s.num_computed_tokens, s.token_ids.size());
    return out;
  }

  // The scheduler's next plan, applied to `tables` as a worker would.
  StepPlan schedule() {
    StepPlan plan = scheduler->schedule();
    tables.apply(plan);
    return plan;
  }

  // The block table of the last plan's run `i`, as a worker holds it.
  std::vector<int32_t> table(size_t i) const {
    const std::span<const int32_t> t = tables.at(last_plan.sequences.at(i).seq_id);
    return {t.begin(), t.end()};
  }

  // Called when the step is planned: the sequence's last token is the one
  // being sampled (pending), so num_tokens() - 1 is its position.
  std::function<int32_t(const Sequence&)> next_token = [](const Sequence& seq) {
    return static_cast<int32_t>(100 + seq.num_tokens() - 1);
  };
  bool ahead = false;
  std::deque<std::vector<SampledToken>> in_flight;  // sampled, not yet updated
  std::unique_ptr<KVCacheManager> kv;
  std::unique_ptr<Scheduler> scheduler;
  StepPlan last_plan;
  BlockTables tables;  // a worker's, updated by every plan schedule() makes
};

using Runs = std::vector<std::tuple<SequenceId, int64_t, size_t>>;

// "[a b c]", for failure messages.
inline std::string str(std::span<const int32_t> ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? " " : "") + std::to_string(ids[i]);
  return out + "]";
}
using Ids = std::vector<int32_t>;

}  // namespace hive::test
