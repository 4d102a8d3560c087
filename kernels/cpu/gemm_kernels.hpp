#pragma once
// The SIMD GEMM kernels behind cpu::matmul (matmul_fast.cpp), one file per
// ISA, each compiled with its own -m flags (kernels/CMakeLists.txt) and
// called only on a path that has that ISA (cpu_features.hpp). This header is
// plain data on purpose: an inline function included into an AVX-512 file
// could be emitted there with AVX-512 code and picked by the linker for the
// whole program.
//
// The one reduction order, whatever m, the tile, or the thread: output
// (i, j) = sum over 16 lanes, lane l accumulating x[i, p] * w[j, p] for
// p = l, l + 16, ... with fused multiply-adds in increasing p (the last,
// partial chunk in lanes 0..k%16-1), then lanes folded in halves (l + 8
// onto l, then + 4, + 2, + 1), then + bias[j]. It is the reference's order
// (dot.cpp: 16 partial sums folded in halves), so on a machine where the
// reference's AVX2 clone fuses its multiply-adds the bits are the same.
//
// The halves layout (the AVX2 kernel's for m >= 4, gemm_avx2.cpp): a row of
// k values, zero-padded to k16 (k rounded up to 16), as the lanes 0-7 of
// every 16-value chunk (k16 / 2 floats) followed by its lanes 8-15 (k16 / 2
// floats). An 8-wide register then walks one half of the 16-lane
// accumulator contiguously, in the same order.
#include <cstdint>

namespace hive::cpu {

// f8_e4m3: an FP8 checkpoint's weights with their block scales, each value
// widened and multiplied by its 128 x 128 block's scale as it is loaded (in
// one f32 multiplication, as f8_e4m3_row_to_f32), so an output has the bits
// the f32 kernel gives on the dequantized weights. Only the AVX-512 kernel
// takes it.
enum class GemmWeights : uint8_t { f32, f16, bf16, f8_e4m3 };

struct GemmArgs {
  const float* x = nullptr;  // [m, k]
  const void* w = nullptr;   // [n, k], stored as `weights`
  GemmWeights weights = GemmWeights::f32;
  const float* bias = nullptr;  // [n] or null
  float* out = nullptr;         // [m, n]
  int64_t m = 0, k = 0, n = 0;
  // x in the halves layout, [m, k16], or null. The AVX2 kernel takes
  // it (with scratch for the block's weights in the same layout) in place of x.
  const float* x_halves = nullptr;
  // x rounded to bf16, [m, k]: the bf16 mode's kernel reads it in place of x.
  const uint16_t* x_bf16 = nullptr;
  // x rounded to bf16 and packed for AMX tiles (pack_x_amx): the bf16 mode's
  // kernel on the amx path reads it in place of x.
  const uint16_t* x_amx = nullptr;
  // f8_e4m3 weights' block scales, [ceil(n / 128), ceil(k / 128)]
  // (Tensor::block_scales); a task's columns start on a multiple of 4, so
  // a tile's weight rows share a row of scales.
  const float* block_scales = nullptr;
  // Room for a task's f8_e4m3 weight rows widened to f32, (column_end -
  // column_begin) * k floats, or null: with it, a task of more than one
  // row tile widens its block once (gemm_avx512.cpp).
  float* w_scratch = nullptr;
};

// Weight rows per tile for rows_left rows of x: a lone row (decode of one
// sequence) walks the weights one row at a time, one sequential stream per
// thread that the prefetchers follow; weight rows read side by side are that
// many streams, and the bytes/s fell well short of a plain row loop's
// (docs/benchmarks.md). Every output's sum is the same either way.
constexpr int64_t weight_rows_per_tile(int64_t rows_left, int64_t widest) {
  return rows_left == 1 ? 1 : widest;
}

// The weight block after a task's own (where the thread's next task usually
// starts), fetched into L2 while the task computes, so that the next task
// finds its weights in cache and memory works while the cores do. Spread
// over all the task's row tiles, `lines` cache lines per chunk of their
// loops: a burst of prefetches stalls the core on its outstanding misses,
// and a 16-row task (3 row tiles) that fetched in its middle tile alone
// asked memory for its block three times as fast as its compute needed,
// more than two cores' share of the bus (docs/benchmarks.md). A task of one
// row tile (decode of a few sequences) streams its own block from memory
// and fetches nothing ahead.
// The fetches stop at the block's end: rounded up to whole lines per chunk
// they would otherwise run on through the blocks after it, which the thread
// reaches only after they have left L2.
struct Ahead {
  const char* next = nullptr;
  const char* end = nullptr;
  int64_t lines = 0;
};

// Ahead for a task of `columns` output columns whose weights take
// block_bytes, over m rows in tiles of tile_rows x tile_columns, each tile
// looping over `chunks` chunks of k.
constexpr Ahead ahead_of(const char* next_block, int64_t block_bytes, int64_t m, int64_t tile_rows,
                         int64_t columns, int64_t tile_columns, int64_t chunks) {
  const int64_t all_chunks =
      (m + tile_rows - 1) / tile_rows * ((columns + tile_columns - 1) / tile_columns) * chunks;
  if (m <= tile_rows || all_chunks == 0) return {next_block, next_block, 0};
  const int64_t lines = (block_bytes + 63) / 64;
  return {next_block, next_block + block_bytes, (lines + all_chunks - 1) / all_chunks};
}

// Output columns [column_begin, column_end) for every row of x. The AVX2
// kernel's scratch is null, or, with x_halves, room for (column_end -
// column_begin) * k16 floats: the block's weights in the halves layout.
void gemm_columns_avx2(const GemmArgs& args, int64_t column_begin, int64_t column_end,
                       float* scratch);
void gemm_columns_avx512(const GemmArgs& args, int64_t column_begin, int64_t column_end);

// The bf16 mode (cpu_features.hpp, MatmulPrecision::bf16), bf16 weights only:
// output (i, j) = sum over 16 lanes, lane l accumulating with vdpbf16ps the
// pairs (p, p + 1) = (32c + 2l, 32c + 2l + 1) of x_bf16[i] and w[j] in
// increasing chunk c (the last, partial chunk zero-filled), then lanes folded
// in halves as above, then + bias[j].
void gemm_columns_avx512_bf16(const GemmArgs& args, int64_t column_begin, int64_t column_end);
// x -> bf16, rounded to nearest even as vcvtneps2bf16 does.
void round_to_bf16_avx512_bf16(const float* x, int64_t count, uint16_t* out);

// The bf16 mode on the amx path (gemm_amx.cpp): output (i, j) is one f32 sum
// to which tdpbf16ps adds the 32-value chunks of x_bf16[i] . w[j] in
// increasing order (the last chunk zero-filled), then + bias[j].
//
// x_amx, x rounded as above and packed: blocks of 16 rows (rows past m
// zero), block b at b * 16 * 32 * amx_chunks(k) values, chunk c of a block
// at c * 512 in it; there pair p of row i, x[16b + i][32c + 2p] and [.. +
// 1] (zero past k), at (p * 16 + i) * 2. A call with more than 16 rows
// reads one zero block past an odd number of blocks.
constexpr int64_t amx_chunks(int64_t k) {
  return (k + 31) / 32;
}
// Writes packed block `block` of x [m, k] into x_amx.
void pack_x_amx(const float* x, int64_t m, int64_t k, int64_t block, uint16_t* x_amx);
// args.x_amx holds the packed blocks of args.x's rows; rows in tiles of 16.
void gemm_columns_amx(const GemmArgs& args, int64_t column_begin, int64_t column_end);

}  // namespace hive::cpu
