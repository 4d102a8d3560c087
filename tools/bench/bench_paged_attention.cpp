// Decode attention of many sequences: the batched varlen paged attention
// (one call per layer per step, cpu::paged_attention) against the
// per-sequence loop the model ran before (cpu::paged_attention_reference:
// one call per sequence, each checking its block table), in the same process,
// for 16 and 64 sequences at contexts 512 and 2048. Shape of the decode
// benchmark's model (Qwen2-0.5B: 14 heads, 2 KV heads, head_dim 64), f32 KV,
// blocks of 16 shuffled over the pool.
//
//   bench_paged_attention [--seconds S per case] [--json FILE]
//
// Pools cycle through copies (layers) totalling at least 512 MiB, so each
// call reads its K/V from memory as a model's layers would. GB/s counts the
// K and V rows read once per call: a decode step's attention is bound by
// them, so "of roofline" is that rate over the read bandwidth probed here
// with the same thread pool. "plan" is the time to build and check the step's
// plan, paid once per step for all layers. Times are medians of 5 rounds in
// which the two variants alternate.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/thread_pool.hpp"
#include "kernels/error.hpp"
#include "kernels/step_attention_plan.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using hive::DType;
using hive::Tensor;
namespace cpu = hive::cpu;

constexpr size_t kMinPoolBytes = size_t{512} << 20;
constexpr int64_t kHeads = 14, kKvHeads = 2, kHeadDim = 64, kBlockSize = 16;

std::string flag(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return argv[i + 1];
  return fallback;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Bytes/s of a parallel read of a buffer far larger than the caches, on the
// ops' thread pool (as bench_matmul probes it).
double probe_read_bandwidth() {
  std::vector<uint64_t> buffer(kMinPoolBytes / sizeof(uint64_t));
  std::iota(buffer.begin(), buffer.end(), 0);
  constexpr int64_t kTasks = 64;
  const int64_t per_task = static_cast<int64_t>(buffer.size()) / kTasks;
  std::vector<uint64_t> sums(kTasks);
  double best = 0;
  for (int pass = 0; pass < 5; ++pass) {
    const auto start = Clock::now();
    cpu::for_each_task(
        kTasks, int64_t{1} << 40, [] { return 0; },
        [&](int64_t t, int&) {
          const uint64_t* p = buffer.data() + t * per_task;
          uint64_t sum = 0;
          for (int64_t i = 0; i < per_task; i += 8) {
            __builtin_prefetch(p + i + 256);
            sum += p[i];
          }
          sums[static_cast<size_t>(t)] = sum;
        });
    best = std::max(best,
                    static_cast<double>(buffer.size() * sizeof(uint64_t)) / seconds_since(start));
  }
  volatile uint64_t sink = std::accumulate(sums.begin(), sums.end(), uint64_t{0});
  (void)sink;
  return best;
}

struct Case {
  int64_t num_seqs, context_len;
};

// Median seconds per call of each variant over 5 rounds, alternating.
std::vector<double> time_variants(const std::vector<std::function<void(size_t)>>& variants,
                                  double seconds) {
  std::vector<std::vector<double>> rounds(variants.size());
  size_t next = 0;
  for (const auto& v : variants) v(next++);  // warm up
  for (int round = 0; round < 5; ++round)
    for (size_t i = 0; i < variants.size(); ++i) {
      const auto start = Clock::now();
      int calls = 0;
      double elapsed = 0;
      do {
        variants[i](next++);
        ++calls;
        elapsed = seconds_since(start);
      } while (elapsed < seconds / 5 / static_cast<double>(variants.size()));
      rounds[i].push_back(elapsed / calls);
    }
  std::vector<double> medians;
  for (auto& r : rounds) {
    std::sort(r.begin(), r.end());
    medians.push_back(r[2]);
  }
  return medians;
}

}  // namespace

int main(int argc, char** argv) try {
  const double seconds = std::stod(flag(argc, argv, "--seconds", "4.0"));
  const std::string json_path = flag(argc, argv, "--json", "");
  const double bandwidth = probe_read_bandwidth();
  const int threads = cpu::cpu_threads();
  std::printf("threads %d, read bandwidth %.1f GB/s, heads %ld/%ld, head_dim %ld, block %ld\n\n",
              threads, bandwidth / 1e9, static_cast<long>(kHeads), static_cast<long>(kKvHeads),
              static_cast<long>(kHeadDim), static_cast<long>(kBlockSize));
  std::printf(
      "| sequences | context | per-sequence loop (ms) | batched (ms) | speedup | "
      "batched GB/s | of roofline | plan (us) |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");

  hive::CpuBackend backend;
  nlohmann::json rows = nlohmann::json::array();
  std::mt19937_64 rng(42);
  for (const Case c : {Case{16, 512}, Case{16, 2048}, Case{64, 512}, Case{64, 2048}}) {
    const int64_t blocks_per_seq = c.context_len / kBlockSize;
    const int64_t num_blocks = c.num_seqs * blocks_per_seq + 1;
    const int64_t block_elems = kBlockSize * kKvHeads * kHeadDim;
    const auto pool_elems = static_cast<size_t>(num_blocks * block_elems);
    const size_t copies = std::max<size_t>(2, kMinPoolBytes / (2 * pool_elems * sizeof(float)));
    std::vector<float> values(pool_elems);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (float& v : values) v = dist(rng);
    std::vector<std::vector<float>> k_pools(copies, values), v_pools(copies, values);

    std::vector<int32_t> ids(static_cast<size_t>(num_blocks - 1));
    std::iota(ids.begin(), ids.end(), 1);
    std::shuffle(ids.begin(), ids.end(), rng);
    std::vector<hive::PlannedSequence> sequences;
    for (int64_t s = 0; s < c.num_seqs; ++s)
      sequences.push_back(
          {1, c.context_len,
           std::span<const int32_t>(ids).subspan(static_cast<size_t>(s * blocks_per_seq),
                                                 static_cast<size_t>(blocks_per_seq))});
    const auto plan_start = Clock::now();
    constexpr int kPlans = 100;
    for (int i = 0; i < kPlans; ++i)
      hive::StepAttentionPlan(backend, sequences, num_blocks, kBlockSize);
    const double plan_seconds = seconds_since(plan_start) / kPlans;
    const hive::StepAttentionPlan plan(backend, sequences, num_blocks, kBlockSize);

    std::vector<float> q(static_cast<size_t>(c.num_seqs * kHeads * kHeadDim));
    for (float& v : q) v = dist(rng);
    std::vector<float> out(q.size());
    const auto params = [&](size_t call) {
      hive::PagedAttentionParams p;
      p.q = Tensor::view(q.data(), DType::f32, {c.num_seqs, kHeads, kHeadDim});
      p.k_blocks = Tensor::view(k_pools[call % copies].data(), DType::f32,
                                {num_blocks, kBlockSize, kKvHeads, kHeadDim});
      p.v_blocks = Tensor::view(v_pools[call % copies].data(), DType::f32,
                                {num_blocks, kBlockSize, kKvHeads, kHeadDim});
      p.out = Tensor::view(out.data(), DType::f32, {c.num_seqs, kHeads, kHeadDim});
      p.plan = plan.plan();
      p.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
      return p;
    };
    const std::vector<double> times =
        time_variants({[&](size_t call) { cpu::paged_attention_reference(params(call)); },
                       [&](size_t call) { backend.paged_attention(params(call)); }},
                      seconds);
    const double kv_bytes =
        2.0 * static_cast<double>(c.num_seqs * c.context_len * kKvHeads * kHeadDim) * 4;
    const double gbps = kv_bytes / times[1] / 1e9;
    std::printf("| %ld | %ld | %.3f | %.3f | %.2f | %.1f | %.0f %% | %.1f |\n",
                static_cast<long>(c.num_seqs), static_cast<long>(c.context_len), times[0] * 1e3,
                times[1] * 1e3, times[0] / times[1], gbps, 100 * gbps * 1e9 / bandwidth,
                plan_seconds * 1e6);
    rows.push_back({{"num_seqs", c.num_seqs},
                    {"context_len", c.context_len},
                    {"per_sequence_loop_seconds", times[0]},
                    {"batched_seconds", times[1]},
                    {"speedup", times[0] / times[1]},
                    {"batched_kv_gbytes_per_s", gbps},
                    {"roofline_fraction", gbps * 1e9 / bandwidth},
                    {"plan_seconds", plan_seconds}});
  }
  if (!json_path.empty()) {
    nlohmann::json doc = {{"threads", threads},   {"read_bandwidth_bytes_per_s", bandwidth},
                          {"num_heads", kHeads},  {"num_kv_heads", kKvHeads},
                          {"head_dim", kHeadDim}, {"block_size", kBlockSize},
                          {"rows", rows}};
    std::ofstream(json_path) << doc.dump(2) << "\n";
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_paged_attention: error: %s\n", e.what());
  return 1;
}
