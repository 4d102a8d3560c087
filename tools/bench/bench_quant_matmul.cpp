// quant_matmul (kernels/quant/quant_matmul.hpp) on each SIMD kernel this
// machine runs, and cpu::matmul on an FP8 checkpoint's f8_e4m3 weights
// with 128 x 128 block scales (on the default CPU path), against cpu::matmul
// with bf16 weights (at the default matmul precision) on the same shape: a
// 4096 x 4096 weight, m = 1, 16, 64.
//
//   bench_quant_matmul [--seconds S per shape] [--json FILE]
//
// Weights cycle through copies totalling at least 256 MiB, so every call
// reads them from memory. GB/s counts the weight bytes only (what a decode
// step reads per layer); "roofline" is that over the read bandwidth probed
// here (roofline.hpp, OMP_NUM_THREADS threads). "x bf16" is the bf16
// matmul's time over this one's. Times are medians of 5 rounds in which the
// variants alternate.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/thread_pool.hpp"
#include "kernels/quant/quant_matmul.hpp"
#include "tools/bench/random_blocks.hpp"
#include "tools/bench/roofline.hpp"

namespace {

using Clock = std::chrono::steady_clock;
namespace cpu = hive::cpu;

constexpr size_t kMinWeightBytes = size_t{256} << 20;
constexpr int64_t kRows = 4096, kCols = 4096;

std::string flag(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return argv[i + 1];
  return fallback;
}

// Copies of one weight, cycled through by successive calls.
struct WeightCopies {
  std::vector<std::vector<uint8_t>> copies;
  explicit WeightCopies(const std::vector<uint8_t>& weight) {
    const size_t count = std::max<size_t>(2, (kMinWeightBytes + weight.size() - 1) / weight.size());
    copies.assign(count, weight);
  }
  const uint8_t* at(size_t call) const { return copies[call % copies.size()].data(); }
  double bytes() const { return static_cast<double>(copies[0].size()); }
};

struct Variant {
  std::string name;
  std::function<void(size_t call)> call;
};

// Median seconds per call of each variant over 5 rounds, alternating.
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
  const double seconds = std::stod(flag(argc, argv, "--seconds", "2.0"));
  const std::string json_path = flag(argc, argv, "--json", "");
  const double bandwidth = hive::bench::probe_read_bandwidth();
  std::printf("threads %d, best CPU path %s, read bandwidth %.1f GB/s, bf16 matmul: %s\n\n",
              cpu::cpu_threads(), std::string(cpu::cpu_path_name(cpu::best_cpu_path())).c_str(),
              bandwidth / 1e9, cpu::describe_matmul_mode().c_str());
  std::printf(
      "| w | m | kernel | ms | GB/s (w) | roofline | x bf16 |\n|---|---|---|---|---|---|---|\n");
  std::mt19937_64 rng(42);
  std::vector<float> bf16_values(static_cast<size_t>(kRows * kCols));
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<uint8_t> bf16(bf16_values.size() * 2);
  for (size_t i = 0; i < bf16_values.size(); ++i) {
    const uint16_t h = hive::f32_to_bf16(normal(rng));
    std::memcpy(&bf16[2 * i], &h, 2);
  }
  const WeightCopies bf16_copies(bf16);
  // FP8: random non-NaN bytes, block scales as weight_scale_inv (amax / 448).
  std::vector<uint8_t> fp8(static_cast<size_t>(kRows * kCols));
  std::uniform_int_distribution<int> fp8_byte(0, 253);
  for (uint8_t& b : fp8) b = static_cast<uint8_t>(fp8_byte(rng)) & 0xfe;  // never 0x7f / 0xff
  const WeightCopies fp8_copies(fp8);
  std::vector<float> fp8_scales(
      static_cast<size_t>(kRows / hive::kFp8Block * kCols / hive::kFp8Block), 0.05f / 448);
  nlohmann::json rows = nlohmann::json::array();
  const cpu::CpuPath saved = cpu::cpu_kernel_path();
  for (const int64_t m : {1, 16, 64}) {
    std::vector<float> x(static_cast<size_t>(m * kCols)), out(static_cast<size_t>(m * kRows));
    std::normal_distribution<float> unit(0.0f, 1.0f);
    for (float& v : x) v = unit(rng);
    const hive::Tensor xt = hive::Tensor::view(x.data(), hive::DType::f32, {m, kCols});
    const hive::Tensor ot = hive::Tensor::view(out.data(), hive::DType::f32, {m, kRows});
    const double bf16_time =
        time_variants({{"bf16",
                        [&](size_t call) {
                          cpu::matmul(xt,
                                      hive::Tensor::view(const_cast<uint8_t*>(bf16_copies.at(call)),
                                                         hive::DType::bf16, {kRows, kCols}),
                                      nullptr, ot);
                        }}},
                      seconds)[0];
    const auto print = [&](const std::string& w, const std::string& kernel, double t,
                           double bytes) {
      std::printf("| %s | %ld | %s | %.3f | %.1f | %.2f | %.2f |\n", w.c_str(),
                  static_cast<long>(m), kernel.c_str(), t * 1e3, bytes / t / 1e9,
                  bytes / t / bandwidth, bf16_time / t);
      rows.push_back({{"weights", w},
                      {"m", m},
                      {"k", kCols},
                      {"n", kRows},
                      {"kernel", kernel},
                      {"seconds", t},
                      {"weight_gbytes_per_s", bytes / t / 1e9},
                      {"roofline_fraction", bytes / t / bandwidth},
                      {"speedup_vs_bf16", bf16_time / t}});
    };
    print("BF16", "matmul", bf16_time, bf16_copies.bytes());
    const double fp8_time = time_variants({{"fp8",
                                            [&](size_t call) {
                                              hive::Tensor w = hive::Tensor::view(
                                                  const_cast<uint8_t*>(fp8_copies.at(call)),
                                                  hive::DType::f8_e4m3, {kRows, kCols});
                                              w.block_scales = fp8_scales.data();
                                              cpu::matmul(xt, w, nullptr, ot);
                                            }}},
                                          seconds)[0];
    print("F8_E4M3 (128 x 128 scales)",
          "matmul " + std::string(cpu::cpu_path_name(cpu::cpu_kernel_path())), fp8_time,
          fp8_copies.bytes() + static_cast<double>(fp8_scales.size() * 4));
    for (const hive::GgmlType type :
         {hive::GgmlType::q8_0, hive::GgmlType::q4_0, hive::GgmlType::q5_0, hive::GgmlType::q5_1,
          hive::GgmlType::q4_k, hive::GgmlType::q5_k, hive::GgmlType::q6_k}) {
      const WeightCopies weights(hive::bench::random_blocks(rng, type, kRows, kCols));
      std::vector<Variant> variants;
      std::vector<std::string> kernels;
      for (const cpu::CpuPath path : cpu::supported_cpu_paths()) {
        cpu::set_cpu_kernel_path(path);
        const std::string kernel(hive::quant_matmul_kernel_name());
        if (kernel == "scalar" ||
            std::find(kernels.begin(), kernels.end(), kernel) != kernels.end())
          continue;
        kernels.push_back(kernel);
        variants.push_back(
            {kernel, [&, path](size_t call) {
               cpu::set_cpu_kernel_path(path);
               hive::quant_matmul({x.data(), weights.at(call), type, out.data(), m, kCols, kRows});
             }});
      }
      const std::vector<double> times = time_variants(variants, seconds);
      for (size_t v = 0; v < variants.size(); ++v)
        print(std::string(hive::ggml_type_info(type).name), variants[v].name, times[v],
              weights.bytes());
      cpu::set_cpu_kernel_path(saved);
    }
  }
  if (!json_path.empty()) {
    const nlohmann::json doc = {{"threads", cpu::cpu_threads()},
                                {"best_cpu_path", cpu::cpu_path_name(cpu::best_cpu_path())},
                                {"bf16_matmul_mode", cpu::describe_matmul_mode()},
                                {"read_bandwidth_bytes_per_s", bandwidth},
                                {"rows", rows}};
    std::ofstream(json_path) << doc.dump(2) << "\n";
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_quant_matmul: error: %s\n", e.what());
  return 1;
}
