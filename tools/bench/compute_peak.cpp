#include "tools/bench/compute_peak.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "kernels/cpu/amx_tiles.hpp"
#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/intrinsics.hpp"

namespace hive::bench {

namespace {

// Independent accumulators per thread: more than the instruction's latency
// times its throughput on any CPU we run on, so the loop is bound by issue.
constexpr int kChains = 16;
constexpr int64_t kRounds = int64_t{1} << 22;

#if defined(__x86_64__)
// Each returns the FLOP it did. The operand is made opaque every round so the
// compiler cannot fold the chains; a zero operand keeps every value finite.
__attribute__((target("avx512f,avx512bf16"))) double dot_bf16_zmm(int64_t rounds) {
  __m512 acc[kChains];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  __m512bh x = (__m512bh)_mm512_setzero_si512();
  const __m512bh w = (__m512bh)_mm512_set1_epi16(0x3f80);
  for (int64_t r = 0; r < rounds; ++r) {
    for (__m512& a : acc) a = _mm512_dpbf16_ps(a, x, w);
    asm volatile("" : "+v"(x));
  }
  float sum = 0;
  for (const __m512& a : acc) sum += _mm512_reduce_add_ps(a);
  return static_cast<double>(rounds) * kChains * 64 + sum;
}

// Four independent tdpbf16ps chains, each 16 x 16 x 32 multiply-adds, over
// zero tiles: the amx kernel's 2 x 2 shape (gemm_amx.cpp).
__attribute__((target("amx-tile,amx-bf16"))) double dot_bf16_amx(int64_t rounds) {
  cpu::amx::TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.bytes_per_row[t] = 64;
    config.rows[t] = 16;
  }
  alignas(64) static const uint16_t zeros[16 * 32] = {};
  cpu::amx::load_tile_config(config);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, zeros, 64);
  _tile_loadd(5, zeros, 64);
  _tile_loadd(6, zeros, 64);
  _tile_loadd(7, zeros, 64);
  for (int64_t r = 0; r < rounds; ++r) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  cpu::amx::release_tiles();
  return static_cast<double>(rounds) * 4 * 16 * 16 * 32 * 2;
}

__attribute__((target("avx512f"))) double fma_zmm(int64_t rounds) {
  __m512 acc[kChains];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  __m512 x = _mm512_setzero_ps();
  const __m512 w = _mm512_set1_ps(1.0f);
  for (int64_t r = 0; r < rounds; ++r) {
    for (__m512& a : acc) a = _mm512_fmadd_ps(x, w, a);
    asm volatile("" : "+v"(x));
  }
  float sum = 0;
  for (const __m512& a : acc) sum += _mm512_reduce_add_ps(a);
  return static_cast<double>(rounds) * kChains * 32 + sum;
}

__attribute__((target("avx2,fma"))) double fma_ymm(int64_t rounds) {
  __m256 acc[kChains];
  for (__m256& a : acc) a = _mm256_setzero_ps();
  __m256 x = _mm256_setzero_ps();
  const __m256 w = _mm256_set1_ps(1.0f);
  for (int64_t r = 0; r < rounds; ++r) {
    for (__m256& a : acc) a = _mm256_fmadd_ps(x, w, a);
    asm volatile("" : "+x"(x));
  }
  alignas(32) float lanes[8];
  float sum = 0;
  for (const __m256& a : acc) {
    _mm256_store_ps(lanes, a);
    for (const float v : lanes) sum += v;
  }
  return static_cast<double>(rounds) * kChains * 16 + sum;
}
#endif

}  // namespace

ComputePeak probe_compute_peak(int threads) {
  ComputePeak peak;
#if defined(__x86_64__)
  double (*loop)(int64_t) = nullptr;
  int64_t rounds = kRounds;
  switch (cpu::cpu_kernel_path()) {
    case cpu::CpuPath::amx:
      peak.instruction = "tdpbf16ps";
      loop = dot_bf16_amx;
      rounds = kRounds / 4;
      break;
    case cpu::CpuPath::avx512_bf16:
      peak.instruction = "vdpbf16ps zmm";
      loop = dot_bf16_zmm;
      break;
    case cpu::CpuPath::avx512:
      peak.instruction = "vfmadd231ps zmm";
      loop = fma_zmm;
      break;
    case cpu::CpuPath::avx2:
      peak.instruction = "vfmadd231ps ymm";
      loop = fma_ymm;
      break;
    case cpu::CpuPath::scalar:
      return peak;
  }
  for (int pass = 0; pass < 5; ++pass) {
    std::vector<double> flops(static_cast<size_t>(threads));
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&, t] { flops[static_cast<size_t>(t)] = loop(rounds); });
    for (std::thread& w : workers) w.join();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double total = 0;
    for (const double f : flops) total += f;
    peak.flops_per_s = std::max(peak.flops_per_s, total / seconds);
  }
#else
  (void)threads;
#endif
  return peak;
}

}  // namespace hive::bench
