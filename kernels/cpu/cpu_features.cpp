#include "kernels/cpu/cpu_features.hpp"

#include <atomic>
#include <cstdlib>
#include <string>

#include "base/error.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace hive::cpu {

namespace {

constexpr CpuPath kAllPaths[] = {CpuPath::scalar, CpuPath::avx2, CpuPath::avx512,
                                 CpuPath::avx512_bf16, CpuPath::amx};

#if defined(__x86_64__)

struct Registers {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

Registers cpuid(unsigned leaf, unsigned subleaf) {
  Registers r;
  if (!__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx)) return Registers{};
  return r;
}

bool bit(unsigned value, int index) {
  return (value >> index) & 1u;
}

// The register state the OS saves on a context switch (XCR0).
uint64_t os_enabled_state() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t{hi} << 32) | lo;
}

// Linux hands out AMX tile data (8 KiB of state per thread) only to
// processes that ask: without this, the first tile instruction faults.
bool request_amx_tile_data() {
#if defined(__linux__)
  constexpr long kArchRequestXcompPermission = 0x1023;  // ARCH_REQ_XCOMP_PERM
  constexpr long kXfeatureTileData = 18;                // XFEATURE_XTILEDATA
  return ::syscall(SYS_arch_prctl, kArchRequestXcompPermission, kXfeatureTileData) == 0;
#else
  return false;
#endif
}

CpuPath detect() {
  const Registers leaf1 = cpuid(1, 0);
  if (!bit(leaf1.ecx, 27)) return CpuPath::scalar;  // no OSXSAVE: no AVX state
  const uint64_t xcr0 = os_enabled_state();
  const bool os_avx = (xcr0 & 0x6) == 0x6;                // XMM, YMM
  const bool os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;  // opmask, ZMM
  const bool os_amx = (xcr0 & 0x60000) == 0x60000;        // XTILECFG, XTILEDATA
  const Registers leaf7 = cpuid(7, 0), leaf7_1 = cpuid(7, 1);
  const bool avx2 = os_avx && bit(leaf1.ecx, 28) && bit(leaf1.ecx, 12) && bit(leaf1.ecx, 29) &&
                    bit(leaf7.ebx, 5);  // AVX, FMA, F16C, AVX2
  if (!avx2) return CpuPath::scalar;
  const bool avx512 = os_avx512 && bit(leaf7.ebx, 16) && bit(leaf7.ebx, 17) &&
                      bit(leaf7.ebx, 30) && bit(leaf7.ebx, 31);  // F, DQ, BW, VL
  if (!avx512) return CpuPath::avx2;
  if (!bit(leaf7_1.eax, 5)) return CpuPath::avx512;  // AVX512_BF16
  const bool amx = os_amx && bit(leaf7.edx, 24) && bit(leaf7.edx, 22);  // AMX-TILE, AMX-BF16
  if (!amx || !request_amx_tile_data()) return CpuPath::avx512_bf16;
  return CpuPath::amx;
}

bool detect_avx512_vnni() {
  if (best_cpu_path() < CpuPath::avx512) return false;
  return bit(cpuid(7, 0).ecx, 11);  // AVX512_VNNI
}

#else

CpuPath detect() {
  return CpuPath::scalar;
}

bool detect_avx512_vnni() {
  return false;
}

#endif

// The machine's best path capped by HIVE_CPU_ISA.
CpuPath initial_path() {
  const CpuPath best = best_cpu_path();
  const char* cap = std::getenv("HIVE_CPU_ISA");
  if (cap == nullptr || *cap == '\0') return best;
  const std::optional<CpuPath> path = parse_cpu_path(cap);
  check(path.has_value(), "HIVE_CPU_ISA must be one of scalar, avx2, avx512, avx512_bf16, amx (got '",
        cap, "')");
  return *path < best ? *path : best;
}

std::atomic<CpuPath>& current_path() {
  static std::atomic<CpuPath> path{initial_path()};
  return path;
}

}  // namespace

std::string_view cpu_path_name(CpuPath path) {
  switch (path) {
    case CpuPath::scalar:
      return "scalar";
    case CpuPath::avx2:
      return "avx2";
    case CpuPath::avx512:
      return "avx512";
    case CpuPath::avx512_bf16:
      return "avx512_bf16";
    case CpuPath::amx:
      return "amx";
  }
  return "?";
}

std::optional<CpuPath> parse_cpu_path(std::string_view name) {
  for (CpuPath path : kAllPaths)
    if (cpu_path_name(path) == name) return path;
  return std::nullopt;
}

CpuPath best_cpu_path() {
  static const CpuPath best = detect();
  return best;
}

bool cpu_has_avx512_vnni() {
  static const bool vnni = detect_avx512_vnni();
  return vnni;
}

std::vector<CpuPath> supported_cpu_paths() {
  std::vector<CpuPath> paths;
  for (CpuPath path : kAllPaths)
    if (path <= best_cpu_path()) paths.push_back(path);
  return paths;
}

CpuPath cpu_kernel_path() {
  return current_path().load(std::memory_order_relaxed);
}

std::string_view cpu_kernel_path_name() {
  return cpu_path_name(cpu_kernel_path());
}

namespace {

MatmulPrecision initial_precision() {
  const char* name = std::getenv("HIVE_MATMUL_PRECISION");
  if (name == nullptr || *name == '\0') return MatmulPrecision::bf16;
  const std::optional<MatmulPrecision> precision = parse_matmul_precision(name);
  check(precision.has_value(), "HIVE_MATMUL_PRECISION must be f32 or bf16 (got '", name, "')");
  return *precision;
}

std::atomic<MatmulPrecision>& current_precision() {
  static std::atomic<MatmulPrecision> precision{initial_precision()};
  return precision;
}

}  // namespace

std::string_view matmul_precision_name(MatmulPrecision precision) {
  return precision == MatmulPrecision::bf16 ? "bf16" : "f32";
}

std::optional<MatmulPrecision> parse_matmul_precision(std::string_view name) {
  if (name == "f32") return MatmulPrecision::f32;
  if (name == "bf16") return MatmulPrecision::bf16;
  return std::nullopt;
}

MatmulPrecision matmul_precision() {
  return current_precision().load(std::memory_order_relaxed);
}

void set_matmul_precision(MatmulPrecision precision) {
  current_precision().store(precision, std::memory_order_relaxed);
}

bool bf16_matmul_active() {
  return matmul_precision() == MatmulPrecision::bf16 && cpu_kernel_path() >= CpuPath::avx512_bf16;
}

std::string describe_matmul_mode() {
  const MatmulPrecision precision = matmul_precision();
  std::string line = str_cat("matmul precision ", matmul_precision_name(precision),
                             precision == MatmulPrecision::f32 ? " (exact)" : "",
                             ", CPU kernel path ", cpu_kernel_path_name());
  if (precision == MatmulPrecision::bf16 && !bf16_matmul_active())
    line += " (no vdpbf16ps: the f32 matmul runs)";
  return line;
}

void set_cpu_kernel_path(CpuPath path) {
  check(path <= best_cpu_path(), "CPU kernel path ", cpu_path_name(path),
        " is not supported here (best: ", cpu_path_name(best_cpu_path()), ")");
  current_path().store(path, std::memory_order_relaxed);
}

}  // namespace hive::cpu
