#pragma once
// The arithmetic roofline of the rows that compute binds (a long prompt's
// prefill, decode of many sequences): multiply-adds per second on the
// engine's threads, probed as independent chains of the widest multiply-add
// instruction the CPU path has for bf16 weights: AMX's tdpbf16ps where the
// CPU has AMX-BF16 (Hive's bf16 matmul mode there), vdpbf16ps where it has
// AVX512_BF16 (what llama.cpp and the mode run there), else an f32 FMA on
// 512 or 256 bits. The probe counts 2 FLOP per multiply-add.
#include <string>

namespace hive::bench {

struct ComputePeak {
  std::string instruction;  // "vdpbf16ps zmm", "vfmadd231ps zmm", ...; empty: no SIMD path
  double flops_per_s = 0;
};

// The best of 5 passes of about 20 ms, each thread running its own chains.
ComputePeak probe_compute_peak(int threads);

}  // namespace hive::bench
