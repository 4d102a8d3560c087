// cpu::matmul on every CPU kernel path of this machine against the reference
// (matmul_reference) in the same process, on a ~0.35B Llama's projections
// (hidden 1024, intermediate 2816): decode-like m = 1, 4, 16, 64 and
// prefill-like m = 512.
//
//   bench_matmul [--dtype bf16|f32|f16|all] [--seconds S per shape] [--json FILE]
//
// Weights cycle through copies totalling at least 512 MiB, so that every
// call reads its weights from memory as a model's layers would, not from the
// last level cache. GB/s counts the bytes of w, x and out once per call; at
// m = 1 it is the kernel's share of the read-bandwidth roofline (probed
// here with the same thread pool). Times are the median of 5 rounds in which
// the reference and the paths alternate; "x reference" is the ratio of the
// reference's time to the path's, in the same run. With bf16 weights on a
// CPU with vdpbf16ps, "bf16 mode" rows time the opt-in HIVE_MATMUL_PRECISION=bf16.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/thread_pool.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using hive::DType;
using hive::Tensor;
namespace cpu = hive::cpu;

constexpr size_t kMinWeightBytes = size_t{512} << 20;

std::string flag(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return argv[i + 1];
  return fallback;
}

// Bytes/s of a parallel read of a buffer far larger than the caches, on the
// ops' thread pool: the roofline of a GEMV at batch 1.
double probe_read_bandwidth() {
  std::vector<uint64_t> buffer(kMinWeightBytes / sizeof(uint64_t));
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
          // One load per 64-byte line, prefetched 2 KiB ahead as the GEMV
          // prefetches its next rows: the lines' arrival rate, not the adds,
          // is what this measures (a plain sum reads 30-40 % less here).
          const uint64_t* p = buffer.data() + t * per_task;
          uint64_t sum = 0;
          for (int64_t i = 0; i < per_task; i += 8) {
            __builtin_prefetch(p + i + 256);
            sum += p[i];
          }
          sums[static_cast<size_t>(t)] = sum;
        });
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    best = std::max(best, static_cast<double>(buffer.size() * sizeof(uint64_t)) / seconds);
  }
  volatile uint64_t sink = std::accumulate(sums.begin(), sums.end(), uint64_t{0});
  (void)sink;
  return best;
}

struct Shape {
  const char* name;
  int64_t m, k, n;
};

// Weight copies for one (n, k, dtype), cycled through by successive calls.
struct WeightSet {
  std::vector<std::vector<uint8_t>> copies;
  DType dtype;
  int64_t n, k;
  WeightSet(std::mt19937_64& rng, DType type, int64_t rows, int64_t cols)
      : dtype(type), n(rows), k(cols) {
    const size_t bytes = static_cast<size_t>(n * k) * hive::dtype_size(dtype);
    const size_t count = std::max<size_t>(2, (kMinWeightBytes + bytes - 1) / bytes);
    std::normal_distribution<float> dist(0.0f, 0.02f);
    std::vector<float> values(static_cast<size_t>(n * k));
    for (float& v : values) v = dist(rng);
    copies.resize(count, std::vector<uint8_t>(bytes));
    for (auto& copy : copies)
      for (size_t i = 0; i < values.size(); ++i) {
        if (dtype == DType::f32) {
          std::memcpy(copy.data() + 4 * i, &values[i], 4);
        } else {
          const uint16_t h = dtype == DType::bf16 ? hive::f32_to_bf16(values[i])
                                                  : hive::f32_to_f16(values[i]);
          std::memcpy(copy.data() + 2 * i, &h, 2);
        }
      }
  }
  Tensor tensor(size_t call) const {
    return Tensor::view(const_cast<uint8_t*>(copies[call % copies.size()].data()), dtype, {n, k});
  }
};

struct Variant {
  std::string path;
  std::function<void(size_t call)> call;
};

// Median seconds per call of each variant over 5 rounds, the variants
// alternating within each round so that a machine's changing load falls on
// all of them alike.
std::vector<double> time_variants(const std::vector<Variant>& variants, double seconds) {
  std::vector<std::vector<double>> rounds(variants.size());
  size_t next = 0;
  for (const Variant& v : variants) v.call(next++);  // warm up
  for (int round = 0; round < 5; ++round)
    for (size_t i = 0; i < variants.size(); ++i) {
      const auto start = Clock::now();
      int calls = 0;
      double elapsed = 0;
      do {
        variants[i].call(next++);
        ++calls;
        elapsed = std::chrono::duration<double>(Clock::now() - start).count();
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
  const std::string dtype_flag = flag(argc, argv, "--dtype", "bf16");
  // Per shape, shared by the reference and the paths.
  const double seconds = std::stod(flag(argc, argv, "--seconds", "4.0"));
  const std::string json_path = flag(argc, argv, "--json", "");
  std::vector<DType> dtypes;
  for (DType d : {DType::bf16, DType::f32, DType::f16})
    if (dtype_flag == "all" || dtype_flag == hive::dtype_name(d)) dtypes.push_back(d);
  hive::check(!dtypes.empty(), "--dtype must be bf16, f32, f16 or all (got '", dtype_flag, "')");

  const Shape shapes[] = {
      {"qkv/o (decode)", 1, 1024, 1024},     {"gate/up (decode)", 1, 1024, 2816},
      {"down (decode)", 1, 2816, 1024},      {"gate/up (4 seqs)", 4, 1024, 2816},
      {"gate/up (16 seqs)", 16, 1024, 2816},
      {"gate/up (64 seqs)", 64, 1024, 2816}, {"qkv/o (prefill 512)", 512, 1024, 1024},
      {"gate/up (prefill 512)", 512, 1024, 2816}, {"down (prefill 512)", 512, 2816, 1024},
  };
  const double bandwidth = probe_read_bandwidth();
  const int threads = cpu::cpu_threads();
  std::printf("threads %d, best CPU path %s, read bandwidth %.1f GB/s\n\n", threads,
              std::string(cpu::cpu_path_name(cpu::best_cpu_path())).c_str(), bandwidth / 1e9);
  std::printf("| shape | m | k | n | w | path | ms | GFLOP/s | GB/s | x reference |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");

  nlohmann::json rows = nlohmann::json::array();
  std::mt19937_64 rng(42);
  const cpu::CpuPath saved = cpu::cpu_kernel_path();
  const cpu::MatmulPrecision saved_precision = cpu::matmul_precision();
  for (DType dtype : dtypes)
    for (const Shape& s : shapes) {
      const WeightSet weights(rng, dtype, s.n, s.k);
      std::vector<float> x(static_cast<size_t>(s.m * s.k)), out(static_cast<size_t>(s.m * s.n));
      std::normal_distribution<float> dist(0.0f, 1.0f);
      for (float& v : x) v = dist(rng);
      const Tensor xt = Tensor::view(x.data(), DType::f32, {s.m, s.k});
      const Tensor ot = Tensor::view(out.data(), DType::f32, {s.m, s.n});
      const double flops = 2.0 * static_cast<double>(s.m * s.n * s.k);
      const double bytes = static_cast<double>(s.n * s.k * static_cast<int64_t>(hive::dtype_size(dtype)) +
                                               4 * (s.m * s.k + s.m * s.n));
      // The reference first; then each SIMD path (the scalar path is the
      // reference itself).
      std::vector<Variant> variants = {{"reference", [&](size_t call) {
                                          cpu::matmul_reference(xt, weights.tensor(call), nullptr,
                                                                ot);
                                        }}};
      for (cpu::CpuPath path : cpu::supported_cpu_paths())
        if (path != cpu::CpuPath::scalar)
          variants.push_back({std::string(cpu::cpu_path_name(path)), [&, path](size_t call) {
                                cpu::set_cpu_kernel_path(path);
                                cpu::set_matmul_precision(cpu::MatmulPrecision::f32);
                                cpu::matmul(xt, weights.tensor(call), nullptr, ot);
                              }});
      // The opt-in bf16 mode (cpu_features.hpp) where it runs: bf16 weights
      // on a path with vdpbf16ps.
      if (dtype == DType::bf16)
        for (cpu::CpuPath path : cpu::supported_cpu_paths())
          if (path >= cpu::CpuPath::avx512_bf16)
            variants.push_back(
                {std::string(cpu::cpu_path_name(path)) + " bf16 mode", [&, path](size_t call) {
                   cpu::set_cpu_kernel_path(path);
                   cpu::set_matmul_precision(cpu::MatmulPrecision::bf16);
                   cpu::matmul(xt, weights.tensor(call), nullptr, ot);
                 }});
      const std::vector<double> times = time_variants(variants, seconds);
      for (size_t v = 0; v < variants.size(); ++v) {
        const double t = times[v];
        std::printf("| %s | %ld | %ld | %ld | %s | %s | %.3f | %.1f | %.1f | %.2f |\n", s.name,
                    static_cast<long>(s.m), static_cast<long>(s.k), static_cast<long>(s.n),
                    std::string(hive::dtype_name(dtype)).c_str(), variants[v].path.c_str(),
                    t * 1e3, flops / t / 1e9, bytes / t / 1e9, times[0] / t);
        rows.push_back({{"shape", s.name}, {"m", s.m}, {"k", s.k}, {"n", s.n},
                        {"dtype", hive::dtype_name(dtype)}, {"path", variants[v].path},
                        {"seconds", t}, {"gflops", flops / t / 1e9},
                        {"gbytes_per_s", bytes / t / 1e9}, {"speedup_vs_reference", times[0] / t}});
      }
      cpu::set_cpu_kernel_path(saved);
      cpu::set_matmul_precision(saved_precision);
    }
  if (!json_path.empty()) {
    nlohmann::json doc = {{"threads", threads},
                          {"best_cpu_path", cpu::cpu_path_name(cpu::best_cpu_path())},
                          {"read_bandwidth_bytes_per_s", bandwidth},
                          {"rows", rows}};
    std::ofstream(json_path) << doc.dump(2) << "\n";
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_matmul: error: %s\n", e.what());
  return 1;
}
