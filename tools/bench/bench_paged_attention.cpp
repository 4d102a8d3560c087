// Decode attention of a step (cpu::paged_attention: one call per layer,
// each KV head read once for its GQA group), split over the context
// (flash-decoding chunks of cpu::kContextChunk positions, the default)
// against the same kernel unsplit (paged_attention_chunked(p, 0), the kernel
// before the split), in the same process, for 1, 16 and 64 sequences at
// contexts 512 and 4096, f32 and bf16 KV (--kv-dtypes: also int8 and fp8,
// rows of one-byte codes and an f32 scale, kernels/kv_quant.hpp). Shape of the decode benchmark's
// model (Qwen2-0.5B: 14 heads, 2 KV heads, head_dim 64), blocks of 16
// shuffled over the pool.
//
//   bench_paged_attention [--seconds S per case] [--kv-heads N] [--group G]
//                         [--kv-dtypes f32,bf16,int8,fp8] [--json FILE]
//
// --group sets the query heads per KV head (7 as Qwen2-0.5B; the side-by-side's
// models have 4).
//
// --kv-heads 1 (multi-query attention) leaves one task per sequence: the
// shape where, on few cores, a lone long sequence needs the split.
//
// Pools cycle through copies (layers) totalling at least 512 MiB, so each
// call reads its K/V from memory as a model's layers would. GB/s counts the
// K and V bytes read once per call: a decode step's attention is bound by
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

#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/thread_pool.hpp"
#include "kernels/kv_quant.hpp"
#include "kernels/step_attention_plan.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using hive::DType;
using hive::Tensor;
namespace cpu = hive::cpu;

constexpr size_t kMinPoolBytes = size_t{512} << 20;
constexpr int64_t kHeadDim = 64, kBlockSize = 16;
// KV heads (--kv-heads, default 2 as Qwen2-0.5B) and query heads (--group
// per KV head, default 7).
int64_t num_kv_heads = 2, num_heads = 14;

std::string flag(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return argv[i + 1];
  return fallback;
}

// A --kv-dtypes name, as --kv-cache-dtype spells it.
DType kv_dtype(const std::string& name) {
  if (name == "f32") return DType::f32;
  if (name == "bf16") return DType::bf16;
  if (name == "int8") return DType::i8;
  if (name == "fp8") return DType::f8_e4m3;
  hive::fail("--kv-dtypes: expected f32, bf16, int8 or fp8 (got '", name, "')");
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

struct Row {
  double unsplit_seconds, split_seconds, plan_seconds, kv_bytes;
};

// `copies` copies of the values rounded to bf16.
std::vector<std::vector<uint16_t>> bf16_copies(const std::vector<float>& values, size_t copies) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = hive::f32_to_bf16(values[i]);
  return std::vector<std::vector<uint16_t>>(copies, bits);
}

// `copies` copies of the pool quantized as `dtype` (i8 or f8_e4m3), rows of
// head_dim codes and their scale.
std::vector<std::vector<uint8_t>> quantized_copies(const std::vector<float>& values, DType dtype,
                                                   size_t copies) {
  const int64_t row = hive::kv_row_elems(dtype, kHeadDim);
  const auto rows = static_cast<int64_t>(values.size()) / kHeadDim;
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * row));
  for (int64_t r = 0; r < rows; ++r)
    hive::quantize_kv_row(values.data() + r * kHeadDim, kHeadDim, dtype, bytes.data() + r * row);
  return std::vector<std::vector<uint8_t>>(copies, bytes);
}

Row run_case(hive::CpuBackend& backend, std::mt19937_64& rng, const Case& c, DType dtype,
             double seconds) {
  const int64_t blocks_per_seq = c.context_len / kBlockSize;
  const int64_t num_blocks = c.num_seqs * blocks_per_seq + 1;
  const int64_t block_elems = kBlockSize * num_kv_heads * kHeadDim;
  const auto pool_elems = static_cast<size_t>(num_blocks * block_elems);
  const bool quantized = hive::is_kv_quantized(dtype);
  // Bytes per value as stored: a quantized row's scale spread over its codes.
  const double value_bytes = quantized
                                 ? static_cast<double>(kHeadDim + hive::kKVScaleBytes) / kHeadDim
                                 : static_cast<double>(hive::dtype_size(dtype));
  const size_t copies = std::max<size_t>(
      2, static_cast<size_t>(static_cast<double>(kMinPoolBytes) /
                             (2.0 * static_cast<double>(pool_elems) * value_bytes)));
  std::vector<float> values(pool_elems);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (float& v : values) v = dist(rng);
  std::vector<std::vector<float>> k_f32, v_f32;
  std::vector<std::vector<uint16_t>> k_bf16, v_bf16;
  std::vector<std::vector<uint8_t>> k_rows, v_rows;
  if (quantized) {
    k_rows = quantized_copies(values, dtype, copies);
    v_rows = quantized_copies(values, dtype, copies);
  } else if (dtype == DType::bf16) {
    k_bf16 = bf16_copies(values, copies);
    v_bf16 = bf16_copies(values, copies);
  } else {
    k_f32.assign(copies, values);
    v_f32.assign(copies, values);
  }

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

  std::vector<float> q(static_cast<size_t>(c.num_seqs * num_heads * kHeadDim));
  for (float& v : q) v = dist(rng);
  std::vector<float> out(q.size());
  const int64_t shape[] = {num_blocks, kBlockSize, num_kv_heads,
                           hive::kv_row_elems(dtype, kHeadDim)};
  const auto params = [&](size_t call) {
    hive::PagedAttentionParams p;
    p.q = Tensor::view(q.data(), DType::f32, {c.num_seqs, num_heads, kHeadDim});
    const size_t copy = call % copies;
    void* k = quantized              ? static_cast<void*>(k_rows[copy].data())
              : dtype == DType::bf16 ? static_cast<void*>(k_bf16[copy].data())
                                     : static_cast<void*>(k_f32[copy].data());
    void* v = quantized              ? static_cast<void*>(v_rows[copy].data())
              : dtype == DType::bf16 ? static_cast<void*>(v_bf16[copy].data())
                                     : static_cast<void*>(v_f32[copy].data());
    p.k_blocks = Tensor::view(k, dtype, shape, 4);
    p.v_blocks = Tensor::view(v, dtype, shape, 4);
    p.out = Tensor::view(out.data(), DType::f32, {c.num_seqs, num_heads, kHeadDim});
    p.plan = plan.plan();
    p.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
    return p;
  };
  const std::vector<double> times = time_variants(
      {[&](size_t call) { cpu::paged_attention_chunked(params(call), 0); },
       [&](size_t call) { cpu::paged_attention_chunked(params(call), cpu::kContextChunk); }},
      seconds);
  const double kv_bytes =
      2.0 * static_cast<double>(c.num_seqs * c.context_len * num_kv_heads * kHeadDim) * value_bytes;
  return {times[0], times[1], plan_seconds, kv_bytes};
}

}  // namespace

int main(int argc, char** argv) try {
  const double seconds = std::stod(flag(argc, argv, "--seconds", "4.0"));
  const std::string json_path = flag(argc, argv, "--json", "");
  num_kv_heads = std::stoll(flag(argc, argv, "--kv-heads", "2"));
  hive::check(num_kv_heads >= 1, "--kv-heads must be >= 1 (got ", num_kv_heads, ")");
  const int64_t group = std::stoll(flag(argc, argv, "--group", "7"));
  hive::check(group >= 1, "--group must be >= 1 (got ", group, ")");
  num_heads = group * num_kv_heads;
  std::vector<DType> dtypes;
  {
    const std::string list = flag(argc, argv, "--kv-dtypes", "f32,bf16");
    for (size_t start = 0; start <= list.size();) {
      const size_t end = std::min(list.find(',', start), list.size());
      dtypes.push_back(kv_dtype(list.substr(start, end - start)));
      start = end + 1;
    }
  }
  const double bandwidth = probe_read_bandwidth();
  const int threads = cpu::cpu_threads();
  std::printf("threads %d, read bandwidth %.1f GB/s, heads %ld/%ld, head_dim %ld, block %ld\n\n",
              threads, bandwidth / 1e9, static_cast<long>(num_heads),
              static_cast<long>(num_kv_heads), static_cast<long>(kHeadDim),
              static_cast<long>(kBlockSize));
  std::printf(
      "| KV | sequences | context | unsplit (ms) | split (ms) | speedup | split GB/s | "
      "of roofline | plan (us) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");

  hive::CpuBackend backend;
  nlohmann::json rows = nlohmann::json::array();
  std::mt19937_64 rng(42);
  for (const DType dtype : dtypes)
    for (const int64_t num_seqs : {1, 16, 64})
      for (const int64_t context_len : {512, 4096}) {
        const Case c{num_seqs, context_len};
        const Row row = run_case(backend, rng, c, dtype, seconds);
        const double gbps = row.kv_bytes / row.split_seconds / 1e9;
        std::printf("| %s | %ld | %ld | %.3f | %.3f | %.2f | %.1f | %.0f %% | %.1f |\n",
                    std::string(hive::dtype_name(dtype)).c_str(), static_cast<long>(c.num_seqs),
                    static_cast<long>(c.context_len), row.unsplit_seconds * 1e3,
                    row.split_seconds * 1e3, row.unsplit_seconds / row.split_seconds, gbps,
                    100 * gbps * 1e9 / bandwidth, row.plan_seconds * 1e6);
        std::fflush(stdout);
        rows.push_back({{"kv_dtype", std::string(hive::dtype_name(dtype))},
                        {"num_seqs", c.num_seqs},
                        {"context_len", c.context_len},
                        {"unsplit_seconds", row.unsplit_seconds},
                        {"split_seconds", row.split_seconds},
                        {"speedup", row.unsplit_seconds / row.split_seconds},
                        {"split_kv_gbytes_per_s", gbps},
                        {"roofline_fraction", gbps * 1e9 / bandwidth},
                        {"plan_seconds", row.plan_seconds}});
      }
  if (!json_path.empty()) {
    nlohmann::json doc = {{"threads", threads},
                          {"read_bandwidth_bytes_per_s", bandwidth},
                          {"num_heads", num_heads},
                          {"num_kv_heads", num_kv_heads},
                          {"head_dim", kHeadDim},
                          {"block_size", kBlockSize},
                          {"context_chunk", cpu::kContextChunk},
                          {"rows", rows}};
    std::ofstream(json_path) << doc.dump(2) << "\n";
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_paged_attention: error: %s\n", e.what());
  return 1;
}
