#include "kernels/dtype.hpp"

namespace hive {

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "f32" || name == "float32" || name == "F32" || name == "float") return DType::f32;
  if (name == "f16" || name == "float16" || name == "F16" || name == "half") return DType::f16;
  if (name == "bf16" || name == "bfloat16" || name == "BF16") return DType::bf16;
  if (name == "i32" || name == "int32" || name == "I32") return DType::i32;
  if (name == "i64" || name == "int64" || name == "I64") return DType::i64;
  if (name == "i8" || name == "int8" || name == "I8") return DType::i8;
  if (name == "f8_e4m3" || name == "float8_e4m3fn" || name == "F8_E4M3") return DType::f8_e4m3;
  return std::nullopt;
}

}  // namespace hive
