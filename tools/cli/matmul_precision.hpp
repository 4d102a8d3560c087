#pragma once
// --matmul-precision f32|bf16, or a launch file's matmul_precision: the CPU
// kernels' matmul precision for this process (kernels/cpu/cpu_features.hpp).
// The flag wins over the launch file, which wins over HIVE_MATMUL_PRECISION.
#include <optional>

#include "kernels/cpu/cpu_features.hpp"
#include "tools/cli/args.hpp"

namespace hive::cli {

// Sets the precision when the flag or the launch file gives one; says on
// stderr when bf16 is asked for on a CPU that cannot run it.
void apply_matmul_precision(const Args& args,
                            std::optional<cpu::MatmulPrecision> from_launch_file = std::nullopt);

}  // namespace hive::cli
