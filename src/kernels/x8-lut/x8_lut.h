// 8-bit table lookup over a flat array: the kernel under nfuse.QLinearLookup (ops/qlinear_lookup.cpp),
// which runs any element-wise function of an int8 / uint8 tensor as a 256-entry table.
//
//   y[i] = table[x[i]]      x[i] read as an unsigned byte 0..255, table of 256 bytes
//
// Signedness is the caller's business: a byte is a byte. For s8 inputs QLinearLookup indexes the
// table with x + 128; a caller passes the table rotated by 128 (table'[b] = table[b ^ 0x80], as
// (x + 128) mod 256 == (uint8)x ^ 0x80), so every kernel reads the raw byte as the index.
//
// `x` and `y` may be the same array (in place) but must not otherwise overlap; n may be 0; no
// alignment is required of x, y or table. Every variant gives the same bytes (there is no
// arithmetic, only selection): tests/kernels/x8_lut_test.cpp checks all 256 indices, every length
// 0..300 and unaligned pointers against table indexing.
//
// Microkernels (hot code: no allocation, no checks), x8_lut__<isa>_u<bytes per main-loop step>:
//   x8_lut__scalar_u1          portable C++
//   x8_lut__avx2_u32           16 vpshufb lookups (one per high nibble, the 16-byte sub-table
//                              broadcast to both lanes) reduced by a vpblendvb tree on bits 4..7
//   x8_lut__avx512bw_u64       the same scheme on 64 bytes, blends under k-masks (vptestmb)
//   x8_lut__avx512vbmi_u256    vpermi2b: two 128-entry halves (4 zmm tables), picked by bit 7
//                              (vpmovb2m); 4 vectors per step. AVX-512 VBMI (Ice Lake, Zen 4+)
//   x8_lut__neon_u32           vqtbl4q / vqtbx4q on four 64-byte quarters (index - 64 k wraps
//                              out of range for the other quarters, which tbx leaves alone)
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu_features.h"

namespace nfuse::kernels {

using X8LutFn = void (*)(const uint8_t* x, uint8_t* y, size_t n, const uint8_t* table);

void x8_lut__scalar_u1(const uint8_t* x, uint8_t* y, size_t n, const uint8_t* table);
#if defined(__x86_64__)
void x8_lut__avx2_u32(const uint8_t* x, uint8_t* y, size_t n, const uint8_t* table);
void x8_lut__avx512bw_u64(const uint8_t* x, uint8_t* y, size_t n, const uint8_t* table);
void x8_lut__avx512vbmi_u256(const uint8_t* x, uint8_t* y, size_t n, const uint8_t* table);
#endif
#if defined(__aarch64__)
void x8_lut__neon_u32(const uint8_t* x, uint8_t* y, size_t n, const uint8_t* table);
#endif

// The table the kernels take for QLinearLookup's 256-entry `table`: as is for u8 inputs, rotated
// by 128 for s8 inputs (see above).
inline void x8_lut_index_table(const uint8_t* table, bool signed_input, uint8_t out[256]) {
  for (size_t b = 0; b < 256; ++b) out[b] = table[signed_input ? b ^ 0x80 : b];
}

// The best kernel for `isa` on this CPU (for kAvx512: the VBMI one when the CPU has VBMI, else
// the BW one when it has BW, else AVX2); the scalar one where `isa` has none compiled in.
X8LutFn x8_lut_kernel(Isa isa);

// Every variant this binary has and this CPU runs, scalar first (tests, benchmarks).
struct X8LutVariant {
  const char* name;
  X8LutFn fn;
};
std::vector<X8LutVariant> x8_lut_variants();

}  // namespace nfuse::kernels
