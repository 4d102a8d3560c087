#pragma once
// Which CPU kernels run: detected once, at first use, from CPUID and what the
// OS enables (XCR0; on Linux, AMX tile data must also be requested with
// arch_prctl). One binary serves every x86-64 machine: the SIMD kernels are
// compiled per file for their ISA and only called on a path that has it.
//
// Paths, each including the ones before it:
//   scalar       the reference loops (kernels/cpu/matmul.cpp)
//   avx2         AVX2 + FMA + F16C
//   avx512       AVX-512 F, BW, VL, DQ
//   avx512_bf16  + AVX512_BF16 (vdpbf16ps)
//   amx          + AMX-TILE and AMX-BF16, tile data granted by the kernel
//
// HIVE_CPU_ISA=<path> caps the path (the machine's best still applies when it
// is lower; an unknown name is an error), so a run can be held to a lower
// path; tests and benchmarks switch it in process (set_cpu_kernel_path).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hive::cpu {

enum class CpuPath : uint8_t { scalar, avx2, avx512, avx512_bf16, amx };

std::string_view cpu_path_name(CpuPath path);
std::optional<CpuPath> parse_cpu_path(std::string_view name);

// The best path this machine and its OS support, ignoring HIVE_CPU_ISA.
CpuPath best_cpu_path();
// Every path up to the best: what a test can iterate.
std::vector<CpuPath> supported_cpu_paths();

// Whether the CPU and OS run AVX-512 VNNI (vpdpbusd, vpdpwssd), which the
// quantized matmul (kernels/quant/quant_matmul.hpp) uses from the avx512
// path up; not a path of its own, as no bf16 kernel needs it.
bool cpu_has_avx512_vnni();

// The path the ops use: the best, capped by HIVE_CPU_ISA.
CpuPath cpu_kernel_path();
std::string_view cpu_kernel_path_name();
// Switches the path (tests, benchmarks); it must be supported. Call between
// ops: an op reads the path once when it starts.
void set_cpu_kernel_path(CpuPath path);

// What a matmul with bf16 weights does with its f32 activations:
//   bf16  (the default) x is rounded to bf16 and pairs are multiplied by
//         vdpbf16ps or AMX tiles, as llama.cpp and vLLM compute bf16
//         checkpoints: about twice the multiply-adds per instruction (AMX:
//         far more), at a relative error of 2^-9 per activation. One fixed
//         order per output (batch- and thread-invariant), but its own: it
//         runs on the avx512_bf16 and amx paths, and on a lower path the f32
//         mode runs instead. The paged attention over a bf16 cache does the
//         same (paged_attention_bf16.cpp): q and the softmax weights rounded
//         to bf16, K and V multiplied as stored. f32 and f16 weights, and an
//         f32 cache, are computed as in f32.
//   f32   the exact mode: x stays f32 and each weight widens exactly, one
//         reduction order on every path (gemm_kernels.hpp), so the bits do
//         not depend on HIVE_CPU_ISA and equal the reference's; the goldens
//         and the op harness run in it.
// HIVE_MATMUL_PRECISION=f32|bf16 sets it at start (an unknown name is an
// error); tests and benchmarks switch it in process.
enum class MatmulPrecision : uint8_t { f32, bf16 };

std::string_view matmul_precision_name(MatmulPrecision precision);
std::optional<MatmulPrecision> parse_matmul_precision(std::string_view name);
MatmulPrecision matmul_precision();
void set_matmul_precision(MatmulPrecision precision);
// Whether a bf16-weight matmul runs the bf16 mode now: asked for, and the
// path has vdpbf16ps.
bool bf16_matmul_active();
// One line for a start-up message: the mode asked for, the path, and what
// runs when the path cannot run the bf16 mode.
std::string describe_matmul_mode();

}  // namespace hive::cpu
