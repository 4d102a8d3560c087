#pragma once
// A 16 x 16 transpose of 32-bit values in AVX-512 registers, for the kernels
// that lay pairs of bf16 out across lanes (paged_attention_bf16.cpp: keys;
// gemm_amx.cpp: x's pairs and the tiles' outputs).
//
// Internal to each file that includes it, and marked for AVX-512F alone, so
// it inlines into callers built with flags (gemm_amx.cpp) and with target
// attributes (paged_attention_bf16.cpp) alike, and no other file links to
// its AVX-512 code.
#if defined(__x86_64__)
#include "kernels/cpu/intrinsics.hpp"

namespace hive::cpu {
namespace {

// c[p] = lane p of rows r[0..15], in four rounds of shuffles: pairs of
// rows, then fours, then 128-bit lanes. All are two-source permutes: GCC
// 12 flags the unpack and 128-bit shuffle intrinsics' undefined pass-through
// as uninitialized.
inline __attribute__((always_inline, target("avx512f"))) void transpose_16x16(const __m512i* r,
                                                                              __m512i* c) {
  // Per 128-bit lane L of a and b (b's values from 16): 32-bit values 0, 1
  // of a and b interleaved, then 2, 3; 64-bit halves 0 of a and b, then 1.
  const __m512i low32 = _mm512_set_epi32(29, 13, 28, 12, 25, 9, 24, 8, 21, 5, 20, 4, 17, 1, 16, 0);
  const __m512i high32 =
      _mm512_set_epi32(31, 15, 30, 14, 27, 11, 26, 10, 23, 7, 22, 6, 19, 3, 18, 2);
  const __m512i low64 = _mm512_set_epi32(29, 28, 13, 12, 25, 24, 9, 8, 21, 20, 5, 4, 17, 16, 1, 0);
  const __m512i high64 =
      _mm512_set_epi32(31, 30, 15, 14, 27, 26, 11, 10, 23, 22, 7, 6, 19, 18, 3, 2);
  __m512i t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_permutex2var_epi32(r[i], low32, r[i + 1]);
    t[i + 1] = _mm512_permutex2var_epi32(r[i], high32, r[i + 1]);
  }
  // u[4a + m], 128-bit lane L: rows 4a..4a + 3 of column 4L + m.
  for (int a = 0; a < 16; a += 4) {
    u[a] = _mm512_permutex2var_epi32(t[a], low64, t[a + 2]);
    u[a + 1] = _mm512_permutex2var_epi32(t[a], high64, t[a + 2]);
    u[a + 2] = _mm512_permutex2var_epi32(t[a + 1], low64, t[a + 3]);
    u[a + 3] = _mm512_permutex2var_epi32(t[a + 1], high64, t[a + 3]);
  }
  // 128-bit lanes (pairs of 64-bit values) of a and b (b's from 8): lanes
  // 0, 1 of each; lanes 2, 3 of each; lanes 0, 2 of each; lanes 1, 3.
  const __m512i lanes01 = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0);
  const __m512i lanes23 = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
  const __m512i lanes02 = _mm512_set_epi64(13, 12, 9, 8, 5, 4, 1, 0);
  const __m512i lanes13 = _mm512_set_epi64(15, 14, 11, 10, 7, 6, 3, 2);
  for (int m = 0; m < 4; ++m) {
    const __m512i x0 = _mm512_permutex2var_epi64(u[m], lanes01, u[4 + m]);
    const __m512i x1 = _mm512_permutex2var_epi64(u[m], lanes23, u[4 + m]);
    const __m512i y0 = _mm512_permutex2var_epi64(u[8 + m], lanes01, u[12 + m]);
    const __m512i y1 = _mm512_permutex2var_epi64(u[8 + m], lanes23, u[12 + m]);
    c[m] = _mm512_permutex2var_epi64(x0, lanes02, y0);
    c[4 + m] = _mm512_permutex2var_epi64(x0, lanes13, y0);
    c[8 + m] = _mm512_permutex2var_epi64(x1, lanes02, y1);
    c[12 + m] = _mm512_permutex2var_epi64(x1, lanes13, y1);
  }
}

}  // namespace
}  // namespace hive::cpu
#endif  // __x86_64__
