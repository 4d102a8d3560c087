#pragma once
// AMX's tile configuration (palette 1), for the kernels that multiply tiles
// (gemm_amx.cpp, paged_attention_bf16.cpp) and the bench's peak probe.
// Plain data and two instructions as asm: including it builds no ISA code.
#include <cstdint>

#if defined(__x86_64__)
namespace hive::cpu::amx {

// The 64 bytes ldtilecfg reads: tile t is rows[t] rows of bytes_per_row[t]
// bytes; a tile left at 0 is not configured.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

// ldtilecfg as an asm that reads all of `config`: through _tile_loadconfig,
// GCC 12 dropped the stores that fill it as dead (only the palette byte was
// written, and the first tile instruction raised SIGILL).
inline __attribute__((always_inline)) void load_tile_config(const TileConfig& config) {
  asm volatile("ldtilecfg %0" : : "m"(config));
}

// tilerelease: the tiles back to their initial state, which a context
// switch does not save (8 KiB when in use).
inline __attribute__((always_inline)) void release_tiles() {
  asm volatile("tilerelease" ::: "memory");
}

}  // namespace hive::cpu::amx
#endif  // __x86_64__
