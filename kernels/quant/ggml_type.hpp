#pragma once
// The ggml tensor types Hive reads from GGUF files: their ids as the format
// writes them, and how many elements and bytes one block of each holds. A
// tensor of a block type stores ceil(numel / block_size) blocks back to back;
// the plain types are blocks of one element.
#include <cstdint>
#include <optional>
#include <string_view>

#include "kernels/dtype.hpp"

namespace hive {

// The values are ggml's `enum ggml_type` ids; ids not listed are unsupported.
enum class GgmlType : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  bf16 = 30,
};

struct GgmlTypeInfo {
  GgmlType type;
  std::string_view name;  // as ggml spells it: "Q4_K"
  uint32_t block_size;    // elements per block
  uint32_t block_bytes;   // bytes per block
};

inline constexpr GgmlTypeInfo kGgmlTypes[] = {
    {GgmlType::f32, "F32", 1, 4},       {GgmlType::f16, "F16", 1, 2},
    {GgmlType::q4_0, "Q4_0", 32, 18},   {GgmlType::q5_0, "Q5_0", 32, 22},
    {GgmlType::q5_1, "Q5_1", 32, 24},   {GgmlType::q8_0, "Q8_0", 32, 34},
    {GgmlType::q4_k, "Q4_K", 256, 144}, {GgmlType::q5_k, "Q5_K", 256, 176},
    {GgmlType::q6_k, "Q6_K", 256, 210}, {GgmlType::bf16, "BF16", 1, 2},
};

// The type with ggml id `id`, or nullopt where Hive does not read it.
constexpr std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id) {
  for (const GgmlTypeInfo& info : kGgmlTypes)
    if (static_cast<uint32_t>(info.type) == id) return info;
  return std::nullopt;
}

constexpr GgmlTypeInfo ggml_type_info(GgmlType type) {
  return *ggml_type_info(static_cast<uint32_t>(type));
}

// The DType a tensor of this ggml type has (kernels/dtype.hpp): each type
// Hive reads is one.
constexpr DType ggml_dtype(GgmlType type) {
  switch (type) {
    case GgmlType::f32:
      return DType::f32;
    case GgmlType::f16:
      return DType::f16;
    case GgmlType::bf16:
      return DType::bf16;
    case GgmlType::q4_0:
      return DType::q4_0;
    case GgmlType::q5_0:
      return DType::q5_0;
    case GgmlType::q5_1:
      return DType::q5_1;
    case GgmlType::q8_0:
      return DType::q8_0;
    case GgmlType::q4_k:
      return DType::q4_k;
    case GgmlType::q5_k:
      return DType::q5_k;
    case GgmlType::q6_k:
      return DType::q6_k;
  }
  return DType::f32;
}

// The ggml type of a float or block dtype; nullopt for the integer ones.
constexpr std::optional<GgmlType> ggml_type(DType dtype) {
  for (const GgmlTypeInfo& info : kGgmlTypes)
    if (ggml_dtype(info.type) == dtype) return info.type;
  return std::nullopt;
}

// dtype.hpp's block sizes are ggml's.
static_assert([] {
  for (const GgmlTypeInfo& info : kGgmlTypes) {
    const DType dtype = ggml_dtype(info.type);
    if (dtype_block_size(dtype) != info.block_size || dtype_block_bytes(dtype) != info.block_bytes)
      return false;
  }
  return true;
}());

}  // namespace hive
