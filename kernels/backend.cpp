#include "kernels/backend.hpp"

namespace hive {

std::string_view op_name(Op op) {
  switch (op) {
    case Op::embedding:
      return "embedding";
    case Op::rms_norm:
      return "rms_norm";
    case Op::rope:
      return "rope";
    case Op::matmul:
      return "matmul";
    case Op::matmul_group:
      return "matmul_group";
    case Op::add:
      return "add";
    case Op::mul_rows:
      return "mul_rows";
    case Op::silu_mul:
      return "silu_mul";
    case Op::sigmoid:
      return "sigmoid";
    case Op::softmax:
      return "softmax";
    case Op::topk:
      return "topk";
    case Op::normalize_rows:
      return "normalize_rows";
    case Op::attention:
      return "attention";
    case Op::paged_attention:
      return "paged_attention";
    case Op::gather_rows:
      return "gather_rows";
    case Op::scatter_add_rows:
      return "scatter_add_rows";
    case Op::reshape_and_cache:
      return "reshape_and_cache";
    case Op::fill:
      return "fill";
    case Op::count:
      break;
  }
  return "?";
}

void Backend::matmul_group(std::span<const MatmulProblem> problems) {
  for (const MatmulProblem& p : problems) matmul(p.x, p.w, p.bias, p.out);
}

}  // namespace hive
