// reshape_and_cache: a step's new K/V rows into their slots of the paged
// cache, converted to the cache's dtype on store (a quantized cache's rows
// quantized per (token, KV head) with their scale, kv_quant.hpp). One call
// per layer per step, whatever the batch; the slots come flat from the step
// (slot_mapping).
//
// Moves: per token, 2 * num_kv_heads * head_dim f32 read and the same count
// written at 4 (f32), 2 (bf16) or 1 byte (int8, fp8; plus a 4-byte scale
// per head); a few KB per token, far below any matmul of the layer.
#include "base/error.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/kv_quant.hpp"

namespace hive::cpu {

void check_kv_write(const Tensor& k, const Tensor& v, const Tensor& slot_mapping,
                    const Tensor& k_blocks, const Tensor& v_blocks) {
  expect(k, DType::f32, 3, "reshape_and_cache k");
  expect(v, DType::f32, 3, "reshape_and_cache v");
  expect(slot_mapping, DType::i64, 1, "reshape_and_cache slot_mapping");
  expect_kv_cache(k_blocks, v_blocks, "reshape_and_cache");
  check(v_blocks.shape == k_blocks.shape && k.shape == v.shape &&
            k.shape[0] == slot_mapping.shape[0] && k.shape[1] == k_blocks.shape[2] &&
            kv_row_elems(k_blocks.dtype, k.shape[2]) == k_blocks.shape[3],
        "reshape_and_cache: k ", k.shape_text(), ", v ", v.shape_text(), ", slot_mapping ",
        slot_mapping.shape_text(), ", k_blocks ", k_blocks.shape_text(), ", v_blocks ",
        v_blocks.shape_text(), " disagree");
}

void reshape_and_cache(const Tensor& k, const Tensor& v, const Tensor& slot_mapping,
                       const Tensor& k_blocks, const Tensor& v_blocks) {
  check_kv_write(k, v, slot_mapping, k_blocks, v_blocks);
  const int64_t row = k.shape[1] * k.shape[2];  // one token's K (or V) elements
  const int64_t head_dim = k.shape[2], cached_row = k_blocks.shape[2] * k_blocks.shape[3];
  const int64_t num_slots = k_blocks.shape[0] * k_blocks.shape[1];
  const int64_t* slots = slot_mapping.as<int64_t>();
  for (int64_t i = 0; i < k.shape[0]; ++i) {
    const int64_t slot = slots[i];
    check(slot >= 0 && slot < num_slots, "reshape_and_cache: token ", i, " has slot ", slot,
          ", expected one in [0, ", num_slots, ")");
    const float* ks = k.as<float>() + i * row;
    const float* vs = v.as<float>() + i * row;
    if (is_kv_quantized(k_blocks.dtype)) {
      uint8_t* kd = k_blocks.as<uint8_t>() + slot * cached_row;
      uint8_t* vd = v_blocks.as<uint8_t>() + slot * cached_row;
      for (int64_t h = 0; h < k.shape[1]; ++h) {
        quantize_kv_row(ks + h * head_dim, head_dim, k_blocks.dtype, kd + h * k_blocks.shape[3]);
        quantize_kv_row(vs + h * head_dim, head_dim, k_blocks.dtype, vd + h * k_blocks.shape[3]);
      }
    } else if (k_blocks.dtype == DType::f32) {
      float* kd = k_blocks.as<float>() + slot * row;
      float* vd = v_blocks.as<float>() + slot * row;
      for (int64_t j = 0; j < row; ++j) kd[j] = ks[j], vd[j] = vs[j];
    } else {
      uint16_t* kd = k_blocks.as<uint16_t>() + slot * row;
      uint16_t* vd = v_blocks.as<uint16_t>() + slot * row;
      for (int64_t j = 0; j < row; ++j) kd[j] = f32_to_bf16(ks[j]), vd[j] = f32_to_bf16(vs[j]);
    }
  }
}

}  // namespace hive::cpu
