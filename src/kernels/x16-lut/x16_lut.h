// 16-bit table lookup over a flat array: the kernel under nfuse.QLinearLookup with 16-bit inputs
// (ops/qlinear_lookup.cpp), which runs any element-wise function of an int16 / uint16 tensor as
// a 65536-entry table (128 KiB: it stays in L2 while a tensor streams through).
//
//   y[i] = table[x[i]]      x[i] read as unsigned 0..65535, table of 65536 16-bit entries
//
// As for x8_lut.h, signedness is the caller's business: for s16 inputs QLinearLookup indexes with
// x + 32768, i.e. the raw bits ^ 0x8000; callers pass the table rotated by 32768
// (x16_lut_index_table), so the kernel reads the raw bits as the index. `x` and `y` may be the
// same array (in place) but must not otherwise overlap; n may be 0.
//
// One portable kernel, x16_lut__scalar_u8 (8 independent lookups per step, about two elements
// per cycle from L2): AVX-512 vpgatherdd ran it 1.6x slower on AMD Zen 5 (bench/RESULTS.md).
#pragma once

#include <cstddef>
#include <cstdint>

namespace nfuse::kernels {

constexpr size_t kX16LutEntries = 65536;

void x16_lut__scalar_u8(const uint16_t* x, uint16_t* y, size_t n, const uint16_t* table);

// The table the kernel takes (kX16LutEntries entries) for QLinearLookup's 65536-entry one: as is
// for u16 inputs, rotated by 32768 for s16 inputs.
inline void x16_lut_index_table(const uint16_t* table, bool signed_input, uint16_t* out) {
  for (size_t b = 0; b < kX16LutEntries; ++b) out[b] = table[signed_input ? b ^ 0x8000 : b];
}

}  // namespace nfuse::kernels
