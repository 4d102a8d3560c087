#pragma once
// A test of a CPU kernel path may skip only where the machine lacks the path.
// cpu::best_cpu_path() decides what runs, from CPUID and the OS; a second
// witness, the flags Linux lists in /proc/cpuinfo (those the kernel also
// enables), must agree before a skip is believed: a path the flags name but
// the detection missed fails the test instead of skipping it.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "kernels/cpu/cpu_features.hpp"

namespace hive::test {

// The best path the flags of /proc/cpuinfo name (the same features
// cpu_features.cpp asks CPUID for), or nullopt without that file.
inline std::optional<cpu::CpuPath> cpuinfo_best_path() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    const std::set<std::string> flags{std::istream_iterator<std::string>(words), {}};
    const auto all = [&](std::initializer_list<const char*> names) {
      for (const char* name : names)
        if (flags.count(name) == 0) return false;
      return true;
    };
    if (!all({"avx", "avx2", "fma", "f16c"})) return cpu::CpuPath::scalar;
    if (!all({"avx512f", "avx512dq", "avx512bw", "avx512vl"})) return cpu::CpuPath::avx2;
    if (!all({"avx512_bf16"})) return cpu::CpuPath::avx512;
    if (!all({"amx_tile", "amx_bf16"})) return cpu::CpuPath::avx512_bf16;
    return cpu::CpuPath::amx;
  }
  return std::nullopt;
}

}  // namespace hive::test

// Skips the test where the machine has no `path`; fails it where
// /proc/cpuinfo says the machine has the path but the detection says not.
#define HIVE_SKIP_WITHOUT_CPU_PATH(path)                                                     \
  if (::hive::cpu::best_cpu_path() < (path)) {                                             \
    const std::optional<::hive::cpu::CpuPath> listed = ::hive::test::cpuinfo_best_path(); \
    if (listed.has_value() && *listed >= (path))                                           \
      FAIL() << "/proc/cpuinfo lists " << ::hive::cpu::cpu_path_name(*listed)              \
             << "'s flags, but best_cpu_path() is "                                        \
             << ::hive::cpu::cpu_path_name(::hive::cpu::best_cpu_path());                  \
    GTEST_SKIP() << "no " << ::hive::cpu::cpu_path_name(path) << " on this machine";       \
  }
