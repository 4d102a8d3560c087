// The scheduler driven as the actor engine drives it under async scheduling,
// on random workloads: two plans in flight, results coming back late,
// requests arriving and cancelled at random, samples that fail, faults that
// void the plans in flight (recompute_all) and empty plans that are dropped.
// A simulated device runs every plan in order (swap out, swap in,
// copy-on-write, then the writes of its runs) and checks that every position
// a run reads holds its sequence's true token: prefix hits, blocks released
// by a sliding window, blocks shared by forked samples and blocks freed while
// a later step still writes them; the device holds its block tables only
// from the plans' updates, and they match the scheduler's. Every output equals the one-step-at-a-time
// run's, and no block leaks.
#include <algorithm>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <string>

#include "tests/core/scheduler_fixture.hpp"

namespace hive {
namespace {

using test::Ids;

class SchedulerFuzz : public test::SchedulerFixture {
 protected:
  // The k-th output token (from 1) of a sequence: about one in seven is
  // end-of-sequence (2).
  static int32_t scripted(const Sequence& seq, int64_t k) {
    uint32_t h = 2166136261u;
    for (const char c : seq.request->id) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
    h = (h ^ static_cast<uint32_t>(seq.sample_index)) * 16777619u;
    h = (h ^ static_cast<uint32_t>(k)) * 16777619u;
    return h % 7 == 0 ? 2 : static_cast<int32_t>(10 + h % 50);
  }
  static int32_t true_token(const Sequence& seq, int64_t pos) {
    if (pos < seq.num_prompt_tokens) return seq.request->prompt_token_ids[static_cast<size_t>(pos)];
    return scripted(seq, pos - seq.num_prompt_tokens + 1);
  }

  using Blocks = std::map<int32_t, std::vector<int32_t>>;  // block -> token per slot
  std::vector<int32_t>& block(Blocks& blocks, int32_t id) {
    std::vector<int32_t>& slots = blocks[id];
    if (slots.empty()) slots.assign(static_cast<size_t>(kv->config().block_size), -999);
    return slots;
  }

  // Runs a plan on the simulated device; returns the number of wrong reads.
  int execute(const StepPlan& plan) {
    int wrong = 0;
    const int64_t bs = kv->config().block_size;
    for (const BlockCopy& c : plan.swap_out) block(host_, c.dst) = block(device_, c.src);
    for (const BlockCopy& c : plan.swap_in) block(device_, c.dst) = block(host_, c.src);
    for (const BlockCopy& c : plan.copy_on_write) block(device_, c.dst) = block(device_, c.src);
    for (const ScheduledSequence& run : plan.sequences) {
      const Sequence& seq = scheduler->sequence(run.seq_id);
      // The worker's table, built from the plans' updates alone, is the
      // scheduler's as it planned the run.
      const std::span<const int32_t> table = tables.at(run.seq_id);
      const std::span<const int32_t> planned = kv->block_table(run.seq_id);
      if (!std::equal(table.begin(), table.end(), planned.begin(), planned.end()) && wrong++ < 5)
        ADD_FAILURE() << "sequence " << seq.id << ": the worker holds " << test::str(table)
                      << ", the scheduler planned " << test::str(planned);
      const auto slot = [&](int64_t pos) -> int32_t& {
        return block(device_, table[static_cast<size_t>(pos / bs)])[static_cast<size_t>(pos % bs)];
      };
      for (int64_t pos = 0; pos < run.num_computed_tokens; ++pos) {
        if (table[static_cast<size_t>(pos / bs)] == BlockPool::kNullBlock) continue;
        if (slot(pos) != true_token(seq, pos) && wrong++ < 5)
          ADD_FAILURE() << "sequence " << seq.id << " reads " << slot(pos) << " at " << pos
                        << ", not " << true_token(seq, pos);
      }
      for (size_t i = 0; i < run.token_ids.size(); ++i) {
        const int64_t pos = run.num_computed_tokens + static_cast<int64_t>(i);
        const int32_t token = run.token_ids[i];
        const bool pending = token == kPendingToken;
        if ((pending ? i + 1 != run.token_ids.size() : token != true_token(seq, pos)) &&
            wrong++ < 5)
          ADD_FAILURE() << "sequence " << seq.id << " runs " << token << " at " << pos;
        slot(pos) = true_token(seq, pos);
      }
    }
    return wrong;
  }

  std::vector<Request> workload(std::mt19937& rng) {
    std::vector<Request> requests;
    std::uniform_int_distribution<int> len(1, 14), max_tokens(1, 9), pick(0, 9);
    for (int i = 0; i < 10; ++i) {
      Request r = request("q" + std::to_string(i), len(rng), max_tokens(rng),
                          pick(rng) < 5 ? 10 : 30 + i);  // half share a prefix
      if (pick(rng) < 2) r.n = 2 + pick(rng) % 2;
      if (pick(rng) < 2) r.stop.ignore_eos = true;
      requests.push_back(r);
    }
    return requests;
  }

  void configure(int variant) {
    SchedulerConfig config;
    config.max_num_batched_tokens = 8;
    config.max_num_seqs = 6;
    config.preemption_mode = variant % 2 ? PreemptionMode::swap : PreemptionMode::recompute;
    KVCacheConfig kv_config = blocks(12, 10, /*prefix_caching=*/true);
    if (variant / 2 % 2) kv_config.sliding_window = 6;
    make(config, kv_config);
    next_token = [](const Sequence& s) { return scripted(s, s.num_output_tokens()); };
    device_.clear();
    host_.clear();
  }

  using Outputs = std::map<std::pair<std::string, int>, std::pair<Ids, FinishReason>>;
  static void record(Outputs& into, const std::vector<SequenceOutput>& outputs) {
    for (const SequenceOutput& o : outputs)
      into[{o.request_id, o.sample_index}] = {o.token_ids, o.finish_reason};
  }

  Blocks device_, host_;
};

TEST_F(SchedulerFuzz, TheActorLoopWithFaultsAndCancelsMatchesOneStepAtATime) {
  int64_t dropped_plans = 0, faults = 0, preemptions = 0, hit_tokens = 0;
  for (int seed = 0; seed < 2000; ++seed) {
    const int variant = seed % 4;
    std::mt19937 rng(static_cast<uint32_t>(seed));
    const std::vector<Request> requests = workload(rng);

    configure(variant);
    for (const Request& r : requests) scheduler->add_request(r);
    Outputs expected;
    for (int i = 0; i < 2000 && scheduler->has_unfinished(); ++i) record(expected, step());
    ASSERT_FALSE(scheduler->has_unfinished());

    configure(variant);
    std::deque<std::vector<SampledToken>> flight;
    Outputs got;
    std::set<std::string> disturbed;  // cancelled, or a sample failed: outputs differ
    std::uniform_int_distribution<int> percent(0, 99);
    size_t submitted = 0;
    int wrong = 0, seed_faults = 0;
    for (int i = 0; i < 5000 &&
                    (submitted < requests.size() || scheduler->has_unfinished() || !flight.empty());
         ++i) {
      if (submitted < requests.size() && percent(rng) < 40)
        scheduler->add_request(requests[submitted++]);
      if (submitted > 0 && percent(rng) < 2) {
        const std::string id = requests[static_cast<size_t>(percent(rng)) % submitted].id;
        scheduler->abort_request(id);
        disturbed.insert(id);
        if (flight.empty()) record(got, scheduler->take_aborted());
      }
      if (percent(rng) < 3 && !flight.empty() && seed_faults < 3) {
        ++seed_faults;
        scheduler->recompute_all();  // the workers and their cache are gone
        flight.clear();
        device_.clear();
        host_.clear();
        tables = BlockTables{};
      }
      while (flight.size() < 2 && scheduler->has_unfinished()) {
        StepPlan plan = schedule();
        if (!flight.empty() && plan.runs_nothing()) {
          scheduler->drop_empty_plan(std::move(plan));
          ++dropped_plans;
          break;
        }
        wrong += execute(plan);
        std::vector<SampledToken> sampled;
        for (const SampleSlot& s : plan.samples) {
          sampled.push_back({s.seq_id, next_token(scheduler->sequence(s.seq_id)), {}, {}});
          if (percent(rng) < 2) {
            sampled.back().error = "no token can be sampled";
            disturbed.insert(scheduler->sequence(s.seq_id).request->id);
          }
        }
        flight.push_back(std::move(sampled));
      }
      if (!flight.empty() && percent(rng) < 70) {
        record(got, scheduler->update(flight.front()));
        flight.pop_front();
      }
    }
    ASSERT_FALSE(scheduler->has_unfinished()) << "seed " << seed;
    ASSERT_EQ(wrong, 0) << "seed " << seed << ", variant " << variant;
    for (Outputs* outputs : {&got, &expected})
      std::erase_if(*outputs, [&](const auto& o) { return disturbed.count(o.first.first) > 0; });
    EXPECT_EQ(got, expected) << "seed " << seed << ", variant " << variant;
    EXPECT_EQ(kv->device_pool().num_free_blocks(), kv->device_pool().num_allocatable_blocks())
        << "seed " << seed;
    faults += seed_faults;
    preemptions +=
        scheduler->stats().num_preemptions_recompute + scheduler->stats().num_preemptions_swap;
    hit_tokens += kv->stats().prefix_hit_tokens;
  }
  // The workloads reach what they are meant to.
  EXPECT_GT(dropped_plans, 0);
  EXPECT_GT(faults, 0);
  EXPECT_GT(preemptions, 0);
  EXPECT_GT(hit_tokens, 0);
}

}  // namespace
}  // namespace hive
