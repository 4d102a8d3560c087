#pragma once
// <immintrin.h> for the SIMD kernel files (gemm_avx2.cpp, and through
// avx512_fold.hpp the AVX-512 ones), which get their ISA from per-file
// flags, and for the bench's peak probe (per-function target attributes).
//
// GCC 12's AVX-512 intrinsics initialise their "undefined" vectors from
// themselves (`__m512 __Y = __Y;`), which -Wuninitialized reports at every
// use (GCC bug 105593, fixed in 13); only the header is exempted.
#if defined(__x86_64__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
