// Sum of a row of 8-bit integers into an int64: the reduction under QLinearGlobalAveragePool on
// the cpu backend (backends/cpu/cpu_qlinear_pool.cpp), whose arithmetic (an exact integer sum,
// then one requantization) is defined in kernels/quant_arithmetic.h. Integer sums are exact,
// so every variant returns the same value.
//
// Microkernels (hot code: no allocation, no checks):
//   qu8_rsum__scalar / qs8_rsum__scalar   portable C++ (auto-vectorised where the compiler can)
//   qu8_rsum__avx2 / qs8_rsum__avx2       vpsadbw against zero: 32 bytes -> four 64-bit partial
//                                         sums per instruction, 128 bytes per step; s8 is read
//                                         as u8 with the sign bit flipped (x ^ 0x80 = x + 128)
//                                         and 128 * n subtracted at the end.
// The AVX-512 ISA uses the AVX2 kernels: vpsadbw on zmm needs AVX-512BW, and the loop is bound by
// memory bandwidth already at 32 bytes per instruction.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu_features.h"

namespace nfuse::kernels {

int64_t qu8_rsum__scalar(const uint8_t* x, size_t n);
int64_t qs8_rsum__scalar(const int8_t* x, size_t n);
#if defined(__x86_64__)
int64_t qu8_rsum__avx2(const uint8_t* x, size_t n);
int64_t qs8_rsum__avx2(const int8_t* x, size_t n);
#endif

struct Q8RsumConfig {
  int64_t (*u8)(const uint8_t* x, size_t n) = nullptr;
  int64_t (*s8)(const int8_t* x, size_t n) = nullptr;
};

// The kernels for `isa` (scalar where `isa` has none compiled in); never null members.
const Q8RsumConfig& q8_rsum_config(Isa isa);

}  // namespace nfuse::kernels
