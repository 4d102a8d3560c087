#include "base/error.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/kv_quant.hpp"

namespace hive::cpu {

void expect(const Tensor& t, DType dtype, int ndim, const char* what) {
  check(t.data != nullptr || t.numel() == 0, what, ": null data");
  check(t.dtype == dtype && t.ndim == ndim && t.is_contiguous(), what, ": expected a contiguous ",
        ndim, "-d ", dtype_name(dtype), " tensor (got ", t.shape_text(), ")");
}

void expect_float(const Tensor& t, int ndim, const char* what) {
  check(is_float(t.dtype) && t.ndim == ndim && t.is_contiguous(), what, ": expected a contiguous ",
        ndim, "-d float tensor (got ", t.shape_text(), ")");
}

void expect_matmul_weight(const Tensor& w) {
  if (w.dtype != DType::f8_e4m3) return expect_float(w, 2, "matmul w");
  check(w.ndim == 2 && w.is_contiguous() && w.block_scales, "matmul w: expected a contiguous 2-d ",
        "f8_e4m3 tensor with its block scales (got ", w.shape_text(),
        w.block_scales ? ")" : ", no block scales)");
}

void expect_kv_cache(const Tensor& k_blocks, const Tensor& v_blocks, const char* what) {
  check(is_kv_cache_dtype(k_blocks.dtype) && k_blocks.ndim == 4 && k_blocks.is_contiguous() &&
            v_blocks.dtype == k_blocks.dtype && v_blocks.ndim == 4 && v_blocks.is_contiguous(),
        what,
        ": expected K and V caches as contiguous 4-d f32, bf16, i8 or f8_e4m3 tensors of one dtype "
        "(got ",
        dtype_name(k_blocks.dtype), " ", k_blocks.shape_text(), " and ", dtype_name(v_blocks.dtype),
        " ", v_blocks.shape_text(), ")");
}

void to_f32(const void* src, DType dtype, int64_t n, float* dst) {
  switch (dtype) {
    case DType::f32: {
      const float* s = static_cast<const float*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = s[i];
      return;
    }
    case DType::bf16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case DType::f16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      return;
    }
    default:
      fail("to_f32: not a float dtype: ", dtype_name(dtype));
  }
}

}  // namespace hive::cpu
