// DequantizeLinear's per-tensor arithmetic, 8-bit (u8 / s8) or 16-bit (u16 / s16) -> f32, exactly
// as kernels/quant_arithmetic.h's dequantize_value:
//
//   y[i] = f32(q - zp) * scale,   q = x[i] ^ flip   (flip 0x80 / 0x8000 and zp + 128 / + 32768 for
//                                                   signed input: the same integer difference)
//
// q - zp is an integer below 2^17 in magnitude, so its conversion to f32 is exact and the single
// multiply rounds once: every kernel gives the scalar one's bits.
// Kernels: scalar (the oracle), AVX2 (8 per step), AVX-512 (16 per step); scalar tails; no
// allocation, no reads or writes past n.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu_features.h"

namespace nfuse::kernels {

using Q8DequantizeFn = void (*)(const uint8_t* x, size_t n, uint8_t flip, int32_t zp, float scale, float* y);
using Q16DequantizeFn = void (*)(const uint16_t* x, size_t n, uint16_t flip, int32_t zp, float scale, float* y);

void q8_dequantize__scalar(const uint8_t* x, size_t n, uint8_t flip, int32_t zp, float scale, float* y);
void q16_dequantize__scalar(const uint16_t* x, size_t n, uint16_t flip, int32_t zp, float scale, float* y);
#if defined(__x86_64__)
void q8_dequantize__avx2(const uint8_t* x, size_t n, uint8_t flip, int32_t zp, float scale, float* y);
void q16_dequantize__avx2(const uint16_t* x, size_t n, uint16_t flip, int32_t zp, float scale, float* y);
void q8_dequantize__avx512(const uint8_t* x, size_t n, uint8_t flip, int32_t zp, float scale, float* y);
void q16_dequantize__avx512(const uint16_t* x, size_t n, uint16_t flip, int32_t zp, float scale, float* y);
#endif

struct QDequantizeKernels {
  Q8DequantizeFn q8;
  Q16DequantizeFn q16;
};

// The kernels for `isa` (scalar where it has none). Never null.
QDequantizeKernels q_dequantize_select(Isa isa);

}  // namespace nfuse::kernels
