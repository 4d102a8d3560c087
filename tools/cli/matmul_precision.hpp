#pragma once
// --matmul-precision f32|bf16, or a launch file's matmul_precision: the CPU
// kernels' matmul precision for this process (kernels/cpu/cpu_features.hpp).
// The flag wins over the launch file, which wins over HIVE_MATMUL_PRECISION.
#include <optional>
#include <string>
#include <string_view>

#include "kernels/cpu/cpu_features.hpp"
#include "tools/cli/args.hpp"

namespace hive::cli {

// Sets the precision when the flag or the launch file gives one; says on
// stderr when bf16 is asked for on a CPU that cannot run it.
void apply_matmul_precision(const Args& args,
                            std::optional<cpu::MatmulPrecision> from_launch_file = std::nullopt);

// One line on stderr at start: "hive serve: matmul precision bf16, CPU kernel
// path amx", then the engine's device note (why it runs on the CPU when a
// device was asked for or found but not used), if it has one.
void report_compute(std::string_view who, const std::string& device_note);

}  // namespace hive::cli
