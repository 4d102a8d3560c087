// Expert load balancing (EPLB) under a skewed routing load whose hot set
// moves: per-rank load imbalance over time with balancing off, fixed once
// and live.
//
//   bench_eplb [--steps S] [--shift-every N] [--tokens T per rank per step]
//              [--period P] [--window W] [--slots K] [--threshold X] [--json FILE]
//
// One synthetic MoE layer (16 experts, top-2, random f32 FFN weights) runs
// expert-parallel over 4 in-process ranks (threads), the real
// moe_forward_expert_parallel. Each rank routes T tokens a step; 60 % of the
// expert picks go to a hot set of two experts, which moves every N steps.
// The router is the identity on the first 16 features, so a token's picks are
// the features set large. A rank's load is the rows its experts computed.
//
//   off:   homes only (contiguous).
//   fixed: plan_replicas once, from the first step's load (today's "decided
//          once from the first traffic", with the same planner and slots).
//   live:  a ReplicaBalancer (the expert actor's) fed each step's routed
//          counts; a new placement's replica weights are copied from the
//          home rank over the communicator between steps.
//
// Every step's output is compared with the single-rank layer bit for bit.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "moe/expert_parallel.hpp"
#include "moe/replica_balancer.hpp"
#include "moe/replica_planner.hpp"
#include "moe/replica_weights.hpp"
#include "parallel/in_process_communicator.hpp"

namespace {

using namespace hive;

constexpr int kRanks = 4, kExperts = 16, kTopK = 2;
constexpr int64_t kHidden = 64, kIntermediate = 32;

std::string flag(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return argv[i + 1];
  return fallback;
}

// Storage for the layer's weights and the views of them.
struct Layer {
  std::vector<std::vector<float>> storage;
  MoeWeights weights;
  RouterConfig router{kExperts, kTopK, true};
};

Tensor store(Layer& layer, std::vector<float> values, std::initializer_list<int64_t> shape) {
  layer.storage.push_back(std::move(values));
  return Tensor::view(layer.storage.back().data(), DType::f32, shape);
}

Layer make_layer(std::mt19937_64& rng) {
  Layer layer;
  layer.storage.reserve(1 + 3 * kExperts);
  std::vector<float> router(kExperts * kHidden, 0.0f);
  for (int e = 0; e < kExperts; ++e) router[static_cast<size_t>(e * kHidden + e)] = 1.0f;
  layer.weights.router = store(layer, router, {kExperts, kHidden});
  std::normal_distribution<float> dist(0.0f, 0.1f);
  const auto random = [&](size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
  };
  for (int e = 0; e < kExperts; ++e) {
    FfnWeights ffn;
    ffn.gate = store(layer, random(kIntermediate * kHidden), {kIntermediate, kHidden});
    ffn.up = store(layer, random(kIntermediate * kHidden), {kIntermediate, kHidden});
    ffn.down = store(layer, random(kHidden * kIntermediate), {kHidden, kIntermediate});
    layer.weights.experts.push_back(ffn);
  }
  return layer;
}

// The hot set of phase p: two experts, on different homes from phase to phase.
std::vector<int> hot_set(int phase) {
  static const int sets[][2] = {{0, 1}, {6, 9}, {14, 15}, {3, 12}, {5, 10}, {2, 13}};
  const auto& s = sets[phase % 6];
  return {s[0], s[1]};
}

// Tokens whose top-2 experts follow the skewed distribution: features of the
// two picks set to 4 and 3, all others small noise.
std::vector<float> make_tokens(std::mt19937_64& rng, int64_t n, const std::vector<int>& hot) {
  std::normal_distribution<float> noise(0.0f, 0.3f);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  std::uniform_int_distribution<int> any(0, kExperts - 1), hot_pick(0, 1);
  std::vector<float> x(static_cast<size_t>(n * kHidden));
  for (float& v : x) v = noise(rng);
  for (int64_t t = 0; t < n; ++t) {
    int picks[2];
    for (int k = 0; k < 2; ++k) do {
        picks[k] = coin(rng) < 0.6 ? hot[static_cast<size_t>(hot_pick(rng))] : any(rng);
      } while (k == 1 && picks[1] == picks[0]);
    x[static_cast<size_t>(t * kHidden + picks[0])] = 4.0f;
    x[static_cast<size_t>(t * kHidden + picks[1])] = 3.0f;
  }
  return x;
}

struct Settings {
  int steps, shift_every;
  int64_t tokens;
  BalancerConfig balancer;
};

struct Run {
  std::vector<std::vector<int64_t>> rank_rows;  // [step][rank]: rows computed
  int64_t replans = 0, mismatches = 0, copies = 0;
  std::vector<int> switch_steps;  // the steps after which the placement changed
};

// One mode over all steps; inputs are regenerated from the same seed, so
// the three modes see the same tokens.
Run run_mode(const std::string& mode, const Layer& layer, const Settings& s) {
  std::mt19937_64 rng(1234);
  const ExpertPlacement homes(kExperts, kRanks, PlacementKind::contiguous);
  ExpertPlacement placement = homes;
  ReplicaBalancer balancer(homes, s.balancer);
  InProcessGroup group(kRanks);
  std::vector<std::unique_ptr<Communicator>> comms;
  std::vector<MoeWeights> weights(kRanks, layer.weights);
  std::vector<CpuBackend> backends(kRanks);  // before the replicas: their buffers' allocator
  std::vector<ReplicaWeights> replicas(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    comms.push_back(group.communicator(r));
    for (int e = 0; e < kExperts; ++e)  // a rank holds only its homes' weights
      if (!homes.holds(r, e)) {
        FfnWeights& f = weights[static_cast<size_t>(r)].experts[static_cast<size_t>(e)];
        f.gate.data = f.up.data = f.down.data = nullptr;
      }
  }
  Run run;
  const int64_t n = s.tokens * kRanks;
  for (int step = 0; step < s.steps; ++step) {
    std::vector<float> x = make_tokens(rng, n, hot_set(step / s.shift_every));
    std::vector<float> expected(x.size()), got(x.size(), NAN);
    CpuBackend cpu;
    moe_forward(cpu, Tensor::view(x.data(), DType::f32, {n, kHidden}), layer.weights, layer.router,
                Tensor::view(expected.data(), DType::f32, {n, kHidden}));
    std::vector<std::vector<int64_t>> routed(kRanks, std::vector<int64_t>(kExperts, 0));
    std::vector<std::vector<int64_t>> computed = routed;
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r)
      threads.emplace_back([&, r] {
        const auto i = static_cast<size_t>(r);
        const int64_t first = r * s.tokens;
        moe_forward_expert_parallel(
            backends[i], *comms[i], placement,
            Tensor::view(x.data() + first * kHidden, DType::f32, {s.tokens, kHidden}), weights[i],
            layer.router,
            Tensor::view(got.data() + first * kHidden, DType::f32, {s.tokens, kHidden}), &routed[i],
            nullptr, &computed[i]);
      });
    for (auto& t : threads) t.join();
    if (std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)) != 0) ++run.mismatches;
    std::vector<int64_t> rows(kRanks, 0), load(kExperts, 0);
    for (int r = 0; r < kRanks; ++r)
      for (int e = 0; e < kExperts; ++e) {
        rows[static_cast<size_t>(r)] += computed[static_cast<size_t>(r)][static_cast<size_t>(e)];
        load[static_cast<size_t>(e)] += routed[static_cast<size_t>(r)][static_cast<size_t>(e)];
      }
    run.rank_rows.push_back(rows);
    // Between steps: decide, then every rank switches (and copies) together.
    ExpertPlacement next = placement;
    if (mode == "fixed" && step == 0)
      next.set_replicas(plan_replicas(load, homes, s.balancer.slots_per_rank));
    if (mode == "live")
      if (auto planned = balancer.add_step(load)) next.set_replicas(*planned);
    if (next.replicas() == placement.replicas()) continue;
    ++run.replans;
    run.switch_steps.push_back(step);
    threads.clear();
    for (int r = 0; r < kRanks; ++r)
      threads.emplace_back([&, r] {
        const auto i = static_cast<size_t>(r);
        replicas[i].switch_placement(backends[i], *comms[i], placement, next, weights[i]);
      });
    for (auto& t : threads) t.join();
    for (int r = 0; r < kRanks; ++r)
      for (int e = 0; e < kExperts; ++e) run.copies += next.holds(r, e) && !placement.holds(r, e);
    placement = next;
  }
  return run;
}

double imbalance(const std::vector<std::vector<int64_t>>& rank_rows, int begin, int end) {
  std::vector<double> sum(kRanks, 0.0);
  for (int step = begin; step < end; ++step)
    for (int r = 0; r < kRanks; ++r)
      sum[static_cast<size_t>(r)] +=
          static_cast<double>(rank_rows[static_cast<size_t>(step)][static_cast<size_t>(r)]);
  return max_over_mean(sum);
}

}  // namespace

int main(int argc, char** argv) try {
  Settings s;
  s.steps = std::stoi(flag(argc, argv, "--steps", "240"));
  s.shift_every = std::stoi(flag(argc, argv, "--shift-every", "60"));
  s.tokens = std::stoll(flag(argc, argv, "--tokens", "64"));
  s.balancer.period_steps = std::stoi(flag(argc, argv, "--period", "5"));
  s.balancer.window_steps = std::stoi(flag(argc, argv, "--window", "10"));
  s.balancer.slots_per_rank = std::stoi(flag(argc, argv, "--slots", "4"));
  s.balancer.threshold = std::stod(flag(argc, argv, "--threshold", "1.10"));
  const std::string json_path = flag(argc, argv, "--json", "");
  check(s.steps > 0 && s.shift_every > 0 && s.tokens > 0,
        "--steps, --shift-every and --tokens must be > 0");
  const int bucket = 10;
  // A shift has settled once the window holds only the new hot set and the
  // next period's check has run.
  const int settle = s.balancer.window_steps + s.balancer.period_steps;

  std::mt19937_64 rng(42);
  const Layer layer = make_layer(rng);
  const std::vector<std::string> modes{"off", "fixed", "live"};
  std::vector<Run> runs;
  for (const std::string& mode : modes) runs.push_back(run_mode(mode, layer, s));

  std::printf("%d ranks, %d experts, top-%d, %lld tokens/rank/step, hot set moves every %d steps\n",
              kRanks, kExperts, kTopK, static_cast<long long>(s.tokens), s.shift_every);
  std::printf("live: period %d, window %d, %d slots/rank, threshold %.2f\n\n",
              s.balancer.period_steps, s.balancer.window_steps, s.balancer.slots_per_rank,
              s.balancer.threshold);
  std::printf(
      "max/mean rows per rank, per %d steps\n\n| steps | off | fixed | live |\n|---|---|---|---|\n",
      bucket);
  nlohmann::json timeline = nlohmann::json::array();
  for (int b = 0; b < s.steps; b += bucket) {
    const int end = std::min(b + bucket, s.steps);
    std::printf("| %d-%d |", b, end - 1);
    nlohmann::json row = {{"first_step", b}, {"last_step", end - 1}};
    for (size_t m = 0; m < modes.size(); ++m) {
      const double v = imbalance(runs[m].rank_rows, b, end);
      std::printf(" %.2f |", v);
      row[modes[m]] = v;
    }
    std::printf("\n");
    timeline.push_back(row);
  }
  std::printf(
      "\nsettled (steps %d after each shift to the next shift)\n\n| phase | off | fixed | live "
      "|\n|---|---|---|---|\n",
      settle);
  nlohmann::json phases = nlohmann::json::array();
  for (int p = 0; p * s.shift_every < s.steps; ++p) {
    const int begin = p * s.shift_every + settle, end = std::min((p + 1) * s.shift_every, s.steps);
    if (begin >= end) continue;
    const std::vector<int> hot = hot_set(p);
    std::printf("| %d (hot %d, %d) |", p, hot[0], hot[1]);
    nlohmann::json row = {{"phase", p}, {"first_step", begin}, {"last_step", end - 1}};
    for (size_t m = 0; m < modes.size(); ++m) {
      const double v = imbalance(runs[m].rank_rows, begin, end);
      std::printf(" %.2f |", v);
      row[modes[m]] = v;
    }
    std::printf("\n");
    phases.push_back(row);
  }
  std::printf(
      "\n| mode | placement switches (after step) | replica copies | steps not bit-identical "
      "|\n|---|---|---|---|\n");
  nlohmann::json totals = nlohmann::json::object();
  for (size_t m = 0; m < modes.size(); ++m) {
    std::string at;
    for (const int step : runs[m].switch_steps)
      at += (at.empty() ? " (" : ", ") + std::to_string(step);
    if (!at.empty()) at += ")";
    std::printf("| %s | %lld%s | %lld | %lld |\n", modes[m].c_str(),
                static_cast<long long>(runs[m].replans), at.c_str(),
                static_cast<long long>(runs[m].copies), static_cast<long long>(runs[m].mismatches));
    totals[modes[m]] = {{"switches", runs[m].replans},
                        {"switch_steps", runs[m].switch_steps},
                        {"copies", runs[m].copies},
                        {"mismatched_steps", runs[m].mismatches}};
  }
  if (!json_path.empty()) {
    nlohmann::json doc = {{"ranks", kRanks},
                          {"experts", kExperts},
                          {"top_k", kTopK},
                          {"tokens_per_rank", s.tokens},
                          {"steps", s.steps},
                          {"shift_every", s.shift_every},
                          {"period", s.balancer.period_steps},
                          {"window", s.balancer.window_steps},
                          {"slots", s.balancer.slots_per_rank},
                          {"threshold", s.balancer.threshold},
                          {"timeline", timeline},
                          {"settled", phases},
                          {"totals", totals}};
    std::ofstream(json_path) << doc.dump(2) << "\n";
  }
  int64_t mismatches = 0;
  for (const Run& r : runs) mismatches += r.mismatches;
  return mismatches == 0 ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_eplb: %s\n", e.what());
  return 1;
}
