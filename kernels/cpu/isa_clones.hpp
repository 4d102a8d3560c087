#pragma once
// Functions built once per x86-64 level: GCC's target_clones makes a copy for
// each level listed and the loader picks one per machine, so one binary runs
// everywhere and fast where it can. Every copy gives the same bits: sums run
// in a fixed order and products are explicit fmas.
//
// Not under ASan or TSan: the loader runs the clones' resolver before the
// sanitizer's runtime is up, and an instrumented resolver crashes there. A
// sanitizer build takes the x86-64-v3 copy alone (AVX2, FMA): the baseline
// copy's std::fma is a libm call per element, which made the sanitizer runs
// of the model tests tens of times slower than the release ones. Such a
// build stops at start on a CPU without AVX2 and FMA (dot.cpp).
#if !defined(__x86_64__)
#define HIVE_CLONES_UP_TO_V3
#define HIVE_CLONES_UP_TO_V4
#elif defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HIVE_SANITIZER_TAKES_V3 1
#define HIVE_CLONES_UP_TO_V3 __attribute__((target("arch=x86-64-v3")))
#define HIVE_CLONES_UP_TO_V4 HIVE_CLONES_UP_TO_V3
#else
#define HIVE_CLONES_UP_TO_V3 __attribute__((target_clones("arch=x86-64-v3", "default")))
#define HIVE_CLONES_UP_TO_V4 \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
