#include "tools/cli/matmul_precision.hpp"

#include <cstdio>
#include <string>

#include "base/error.hpp"

namespace hive::cli {

void apply_matmul_precision(const Args& args,
                            std::optional<cpu::MatmulPrecision> from_launch_file) {
  std::optional<cpu::MatmulPrecision> precision = from_launch_file;
  if (args.has("--matmul-precision")) {
    const std::string name = args.get("--matmul-precision", "");
    precision = cpu::parse_matmul_precision(name);
    check(precision.has_value(), "--matmul-precision must be f32 or bf16 (got '", name, "')");
  }
  if (!precision) return;
  cpu::set_matmul_precision(*precision);
  if (*precision == cpu::MatmulPrecision::bf16 && !cpu::bf16_matmul_active())
    std::fprintf(stderr,
                 "matmul precision bf16: CPU kernel path %s has no vdpbf16ps, the f32 matmul "
                 "runs\n",
                 std::string(cpu::cpu_kernel_path_name()).c_str());
}

void report_compute(std::string_view who, const std::string& device_note) {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(who.size()), who.data(),
               cpu::describe_matmul_mode().c_str());
  if (!device_note.empty()) std::fprintf(stderr, "%s\n", device_note.c_str());
}

}  // namespace hive::cli
