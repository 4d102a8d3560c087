#pragma once
// The SIMD kernels behind quant_matmul (quant_matmul.cpp), one file per ISA
// (quant_gemm_avx2.cpp, quant_gemm_avx512_vnni.cpp), each compiled with its
// own -m flags and called only on a path that has that ISA. Plain data, as
// kernels/cpu/gemm_kernels.hpp and for the same reason.
//
// A task takes a block of output columns for a block of rows. The weights
// stream from memory once per task, whatever m: at m = 1 a column at a time
// straight into registers; from m = 2 on, the weight rows are unpacked into
// scratch (below) once per task and run as register tiles against several
// rows at a time: on AVX-512 the Q8_0 / Q4_0 ones kLaneColumns at a time
// (a column per lane) and the K-quants all 16 columns of a task at once
// (ColumnBlockK), against 8 rows at a time; on AVX2 one at a time.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/quant/blocks.hpp"
#include "kernels/quant/ggml_type.hpp"

namespace hive {

struct QuantMatmul;
// Throws on a type quant_matmul does not take or k not whole blocks.
void check_quant_matmul(const QuantMatmul& problem);

struct QuantGemmArgs {
  GgmlType type = GgmlType::q8_0;
  const char* w = nullptr;  // weight row j at w + j * w_row_bytes
  int64_t w_row_bytes = 0;
  int64_t m = 0, k = 0, n = 0;
  // Q8_0 / Q4_0: row i's Q8_0 activations with quants, scales and sums
  // apart, x_qs[i * 32 x_blocks + 32 b + t], x_d[i * x_blocks + b] (f32)
  // and x_offset[i * x_blocks + b] = -128 * the block's sum of quants (what
  // vpdpbusd's w + 128 adds); x_blocks = k / 32.
  const int8_t* x_qs = nullptr;
  const float* x_d = nullptr;
  const int32_t* x_offset = nullptr;
  int64_t x_blocks = 0;
  // K-quants: row i's Q8_K blocks at x_k[i * k / 256].
  const BlockQ8_K* x_k = nullptr;
  float* out = nullptr;  // row i at out + i * n
};

// A Q8_0 / Q4_0 weight block unpacked for AVX2: the signed quants, their
// magnitudes (vpmaddubsw multiplies |w| by sign(w) * x) and the scale.
struct alignas(32) UnpackedQ8_0 {
  int8_t w[32];
  uint8_t abs_w[32];
  float d = 0;
};

// Output columns of one 32-block (Q8_0, Q4_0, Q5_0, Q5_1) register tile on
// AVX-512: one per lane.
inline constexpr int kLaneColumns = 16;

// Block b of kLaneColumns weight rows, a column per 32-bit lane: w[g] holds
// each column's quants 4g .. 4g + 3 (column j at bytes 4j ..) as w + 128,
// the unsigned factor of vpdpbusd, and d their scales (zero past the
// columns a task has).
struct alignas(64) LaneBlockQ8_0 {
  uint8_t w[8][64];
  float d[kLaneColumns];
  float m[kLaneColumns];  // Q5_1's minimums
};

// A K-quant block unpacked for AVX2: quants 0..63 in element order, the scale of
// each pair of elements (2t, 2t + 1) for an int16 multiply-add after
// maddubs, and per group of 16 what multiplies the activation's bsums: the
// min (Q4_K, Q5_K) or 32 * the scale (Q6_K, whose quants are offset by 32).
struct alignas(64) UnpackedK {
  uint8_t q[kQKK];
  int16_t pair_scale[kQKK / 2];
  int16_t min[16];
  float d = 0, dmin = 0;
};

// K-quants from m = 2 on, AVX-512 (quant_gemm_k_avx512.cpp): a K block of
// kKColumns weight rows with a vector's lanes as the columns. q[t] holds
// the quants (unsigned) of elements 4 t .. 4 t + 3 of the block, column c's
// at bytes 4 c .. 4 c + 3, so one vpdpbusd against an activation dword
// broadcast adds a group of 4 to all 16 columns' sums:
//
//   q[t]:  | c0: e4t e4t+1 e4t+2 e4t+3 | c1: ... | ... | c15: ... |
//
// scale[g]: each column's scale of group g of 32 (Q4_K, Q5_K; g < 8) or
// 16 (Q6_K), as int32. min[p]: int16 pairs that multiply the activation's
// bsums 2 p, 2 p + 1 (vpdpwssd): the min of sub-block p twice (Q4_K, Q5_K:
// B), or -32 times the scales of groups 2 p, 2 p + 1 (Q6_K: A's offset).
inline constexpr int kKColumns = 16;
struct alignas(64) ColumnBlockK {
  uint8_t q[kQKK / 4][64];
  int32_t scale[16][16];
  int16_t min[8][32];
  float d[16], dmin[16];
};
// Activation rows a ColumnBlockK tile multiplies at once.
inline constexpr int kKRows = 8;

// Weight rows a register tile unpacks together, and activation rows it
// multiplies them with.
inline constexpr int kTileColumns = 4;
inline constexpr int kTileRows = 4;

// Rows [first, first + Rows) of a, for each row tile: Rows is kTileRows but
// in the last tile, each count its own instantiation, so a short tile does
// no work for the rows it lacks. Each kernel file passes its own tile, so
// every instantiation is compiled for that file's instruction set.
template <class Tile>
void by_row_tiles(const QuantGemmArgs& a, Tile tile) {
  for (int64_t first = 0; first < a.m; first += kTileRows) {
    switch (std::min<int64_t>(kTileRows, a.m - first)) {
      case 1:
        tile(std::integral_constant<int, 1>(), first);
        break;
      case 2:
        tile(std::integral_constant<int, 2>(), first);
        break;
      case 3:
        tile(std::integral_constant<int, 3>(), first);
        break;
      default:
        tile(std::integral_constant<int, kTileRows>(), first);
    }
  }
}

// Decode (m = 1) reads each weight once, front to back, and the hardware
// prefetchers alone kept too few lines in flight for it: the kernels reached
// about 60 % of the read bandwidth (docs/benchmarks.md). So each asks for
// the line kStreamAhead bytes past the one it reads, into L1, one request
// per line: `next` is the first line not yet asked for. A task's columns
// are contiguous, so one cursor walks on from each column into the next.
inline constexpr int64_t kStreamAhead = 4096;

struct StreamAhead {
  const char* next = nullptr;
  // Every line before read_end + kStreamAhead asked for.
  void upto(const char* read_end) {
    for (; next < read_end + kStreamAhead; next += 64) __builtin_prefetch(next, 0, 3);
  }
};

// Per thread: the unpacked weight rows, k / 32 blocks (q8: one row, AVX2;
// q8_lanes: kLaneColumns rows, AVX-512), kTileColumns x k / 256 K blocks
// (AVX2) or k / 256 ColumnBlockK (AVX-512).
struct QuantScratch {
  UnpackedQ8_0* q8 = nullptr;
  LaneBlockQ8_0* q8_lanes = nullptr;
  UnpackedK* blocks = nullptr;
  ColumnBlockK* k_columns = nullptr;  // k / 256, AVX-512 K-quants
};

// Output columns [column_begin, column_end) of every row in args.
void quant_gemm_columns_avx2(const QuantGemmArgs& args, int64_t column_begin, int64_t column_end,
                             const QuantScratch& scratch);
void quant_gemm_columns_avx512_vnni(const QuantGemmArgs& args, int64_t column_begin,
                                    int64_t column_end, const QuantScratch& scratch);
// K-quants, m >= 2 (quant_gemm_columns_avx512_vnni's).
void quant_gemm_k_columns_avx512_vnni(const QuantGemmArgs& args, int64_t column_begin,
                                      int64_t column_end, const QuantScratch& scratch);

}  // namespace hive
