// A decoder stack's quantized matmuls as the model runs them
// (runtime/model: one quant_matmul_group for q, k and v, one for o, one for
// gate and up, one for down), on random blocks of one type, against the
// same stack's bf16 weights through cpu::matmul. Each layer has its own
// weights, so every call reads them from memory, as a decode step does.
//
//   bench_quant_layers [--type q8_0|q4_0|q4_k|q6_k] [--m 1,16,64]
//                      [--layers 30] [--hidden 1024] [--intermediate 2816]
//                      [--kv 256] [--seconds S] [--json FILE]
//
// The defaults are tools/make_gguf_pair.py's dense model. GB/s counts the
// weight bytes; "roofline" is that over the read bandwidth probed here
// (roofline.hpp, OMP_NUM_THREADS threads); "x bf16" is the bf16 stack's time
// over the quantized one's, both timed in the same rounds, alternating.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
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

std::string flag(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return argv[i + 1];
  return fallback;
}

hive::GgmlType type_named(const std::string& name) {
  if (name == "q8_0") return hive::GgmlType::q8_0;
  if (name == "q4_0") return hive::GgmlType::q4_0;
  if (name == "q4_k") return hive::GgmlType::q4_k;
  if (name == "q6_k") return hive::GgmlType::q6_k;
  hive::fail("bench_quant_layers: --type ", name, " is not q8_0, q4_0, q4_k or q6_k");
}

std::vector<uint8_t> random_bf16(std::mt19937_64& rng, int64_t n, int64_t k) {
  std::vector<uint8_t> bytes(static_cast<size_t>(n * k * 2));
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (size_t i = 0; i < bytes.size(); i += 2) {
    const uint16_t h = hive::f32_to_bf16(normal(rng));
    std::memcpy(&bytes[i], &h, 2);
  }
  return bytes;
}

// One projection: its weight and its shape.
struct Projection {
  std::vector<uint8_t> w;
  int64_t n = 0, k = 0;
};

// The layer's products in the model's groups: {q, k, v}, {o}, {gate, up}, {down}.
struct Layer {
  std::vector<std::vector<Projection>> groups;
};

struct Stack {
  std::vector<Layer> layers;
  double bytes = 0;
};

Stack make_stack(std::mt19937_64& rng, bool bf16, hive::GgmlType type, int64_t layers,
                 int64_t hidden, int64_t intermediate, int64_t kv) {
  Stack s;
  const auto projection = [&](int64_t n, int64_t k) {
    Projection p{bf16 ? random_bf16(rng, n, k) : hive::bench::random_blocks(rng, type, n, k), n, k};
    s.bytes += static_cast<double>(p.w.size());
    return p;
  };
  for (int64_t l = 0; l < layers; ++l) {
    Layer layer;
    layer.groups.push_back(
        {projection(hidden, hidden), projection(kv, hidden), projection(kv, hidden)});
    layer.groups.push_back({projection(hidden, hidden)});
    layer.groups.push_back({projection(intermediate, hidden), projection(intermediate, hidden)});
    layer.groups.push_back({projection(hidden, intermediate)});
    s.layers.push_back(std::move(layer));
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) try {
  const hive::GgmlType type = type_named(flag(argc, argv, "--type", "q8_0"));
  const int64_t layers = std::stol(flag(argc, argv, "--layers", "30"));
  const int64_t hidden = std::stol(flag(argc, argv, "--hidden", "1024"));
  const int64_t intermediate = std::stol(flag(argc, argv, "--intermediate", "2816"));
  const int64_t kv = std::stol(flag(argc, argv, "--kv", "256"));
  const double seconds = std::stod(flag(argc, argv, "--seconds", "3"));
  const std::string json_path = flag(argc, argv, "--json", "");
  std::vector<int64_t> ms;
  std::stringstream list(flag(argc, argv, "--m", "1,16,64"));
  for (std::string item; std::getline(list, item, ',');) ms.push_back(std::stol(item));

  std::mt19937_64 rng(7);
  const Stack quant = make_stack(rng, false, type, layers, hidden, intermediate, kv);
  const Stack bf16 = make_stack(rng, true, type, layers, hidden, intermediate, kv);
  const double bandwidth = hive::bench::probe_read_bandwidth();
  std::printf(
      "%s, %ld layers, hidden %ld, intermediate %ld, kv %ld: %.0f MB (bf16 %.0f MB); "
      "threads %d, kernel %s, read bandwidth %.1f GB/s\n\n",
      std::string(hive::ggml_type_info(type).name).c_str(), static_cast<long>(layers),
      static_cast<long>(hidden), static_cast<long>(intermediate), static_cast<long>(kv),
      quant.bytes / 1e6, bf16.bytes / 1e6, cpu::cpu_threads(),
      std::string(hive::quant_matmul_kernel_name()).c_str(), bandwidth / 1e9);
  std::printf(
      "| m | quantized ms | GB/s | roofline | bf16 ms | GB/s | roofline | x bf16 |\n"
      "|---|---|---|---|---|---|---|---|\n");
  nlohmann::json rows = nlohmann::json::array();
  for (const int64_t m : ms) {
    const int64_t widest = std::max(hidden, intermediate);
    std::vector<float> x(static_cast<size_t>(m * widest));
    std::normal_distribution<float> unit(0.0f, 1.0f);
    for (float& v : x) v = unit(rng);
    std::vector<std::vector<float>> outs(3, std::vector<float>(static_cast<size_t>(m * widest)));
    const auto run_quant = [&] {
      for (const Layer& layer : quant.layers)
        for (const auto& group : layer.groups) {
          std::vector<hive::QuantMatmul> problems;
          for (size_t i = 0; i < group.size(); ++i)
            problems.push_back(
                {x.data(), group[i].w.data(), type, outs[i].data(), m, group[i].k, group[i].n});
          hive::quant_matmul_group(problems);
        }
    };
    const auto run_bf16 = [&] {
      for (const Layer& layer : bf16.layers)
        for (const auto& group : layer.groups)
          for (size_t i = 0; i < group.size(); ++i)
            cpu::matmul(hive::Tensor::view(x.data(), hive::DType::f32, {m, group[i].k}),
                        hive::Tensor::view(const_cast<uint8_t*>(group[i].w.data()),
                                           hive::DType::bf16, {group[i].n, group[i].k}),
                        nullptr,
                        hive::Tensor::view(outs[i].data(), hive::DType::f32, {m, group[i].n}));
    };
    run_quant();
    run_bf16();
    std::vector<double> tq, tb;
    for (int round = 0; round < 7; ++round) {
      for (int v = 0; v < 2; ++v) {
        const bool q = (v == 0) == (round % 2 == 0);
        const auto start = Clock::now();
        int calls = 0;
        double elapsed = 0;
        do {
          q ? run_quant() : run_bf16();
          ++calls;
          elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        } while (elapsed < seconds / 14);
        (q ? tq : tb).push_back(elapsed / calls);
      }
    }
    std::sort(tq.begin(), tq.end());
    std::sort(tb.begin(), tb.end());
    const double q = tq[3], b = tb[3];
    std::printf("| %ld | %.2f | %.1f | %.2f | %.2f | %.1f | %.2f | %.2f |\n", static_cast<long>(m),
                q * 1e3, quant.bytes / q / 1e9, quant.bytes / q / bandwidth, b * 1e3,
                bf16.bytes / b / 1e9, bf16.bytes / b / bandwidth, b / q);
    rows.push_back({{"m", m},
                    {"quantized_seconds", q},
                    {"quantized_roofline_fraction", quant.bytes / q / bandwidth},
                    {"bf16_seconds", b},
                    {"bf16_roofline_fraction", bf16.bytes / b / bandwidth},
                    {"speedup_vs_bf16", b / q}});
  }
  if (!json_path.empty()) {
    const nlohmann::json doc = {{"type", hive::ggml_type_info(type).name},
                                {"kernel", hive::quant_matmul_kernel_name()},
                                {"threads", cpu::cpu_threads()},
                                {"read_bandwidth_bytes_per_s", bandwidth},
                                {"weight_bytes", quant.bytes},
                                {"rows", rows}};
    std::ofstream(json_path) << doc.dump(2) << "\n";
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_quant_layers: error: %s\n", e.what());
  return 1;
}
