// A 64-bit checksum of a byte array, defined once and computed by per-ISA kernels that all give
// the same value (a context binary written on one CPU is verified on another):
//
//   stripes of 64 bytes, eight 64-bit lanes; stripe j of a block, lane i, word x (little-endian):
//     k = x ^ (kKey[i] + j * kStep)
//     acc[i] += lo32(k) * hi32(k)          (a 32 x 32 -> 64-bit product)
//     acc[i] += the word of lane i ^ 1     (the raw bytes too: every bit of x reaches a lane
//                                           linearly, so any single-bit flip changes the result)
//   after each block of kChecksumStripesPerBlock stripes every lane is scrambled
//     acc[i] = (acc[i] ^ (acc[i] >> 47) ^ kKey[i]) * kPrime32
//   so that reordering stripes across blocks shows; the stripe index in the key makes it show
//   within a block. A last partial stripe is zero-padded and the length enters the final mix.
//
// A corruption check, not a signature: an adversary can rewrite the stored value (the loader's
// structural validation is what stands against hostile files). The products and adds are
// independent per lane, so the vector kernels run at memory bandwidth: verifying a model's
// weights at load costs what reading them costs.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu_features.h"

namespace nfuse::kernels {

inline constexpr size_t kChecksumLanes = 8;
inline constexpr size_t kChecksumStripeBytes = 64;
inline constexpr size_t kChecksumStripesPerBlock = 32;

// The state between blocks: kernels process whole blocks (`blocks` of them, from `data`), the
// portable driver does the tail and the final mix.
using X8ChecksumBlocksFn = void (*)(const uint8_t* data, size_t blocks, uint64_t acc[kChecksumLanes]);

void x8_checksum_blocks__scalar(const uint8_t* data, size_t blocks, uint64_t acc[kChecksumLanes]);
#if defined(__x86_64__)
void x8_checksum_blocks__avx2(const uint8_t* data, size_t blocks, uint64_t acc[kChecksumLanes]);
void x8_checksum_blocks__avx512(const uint8_t* data, size_t blocks, uint64_t acc[kChecksumLanes]);
#endif

// The block kernel for `isa` (scalar where it has none). Never null.
X8ChecksumBlocksFn x8_checksum_select(Isa isa);

// The checksum of data[0, size) with the block kernel of `isa` (one this CPU runs:
// isa_supported); every ISA gives the same value.
uint64_t x8_checksum(const void* data, size_t size, Isa isa);

// With the block kernel of `selected_isa()`.
uint64_t x8_checksum(const void* data, size_t size);

// The constants of the definition above (the kernels read them from here).
extern const uint64_t kChecksumKey[kChecksumLanes];
inline constexpr uint64_t kChecksumStep = 0x9E3779B97F4A7C15ull;
inline constexpr uint64_t kChecksumPrime32 = 0x9E3779B1ull;

}  // namespace nfuse::kernels
