// Conversions between quantized 8-bit planes and exact-integer f32 sums, for integer operators
// that run their multiply-adds on the f32 kernels (QLinearConv's depthwise path,
// cpu_qlinear_dwconv.cpp): while every partial sum is an integer below 2^24 in magnitude, f32
// arithmetic is exact in any order and with FMA, so the f32 kernels give the exact int32 sum.
//
//   unpack:   out[i] = f32(u8(x[i] ^ flip) - zp)         (flip 0x80 and zp + 128 for s8 input)
//   requant:  acc = i32(sums[i]) + bias (mod 2^32);  y[i] = the qu8 GEMM's requantization of
//             acc (qu8_gemm.h, "Exactness": f32 multiply, clamp to [rq.lo, rq.hi], round half
//             to even, + rq.zero_point, xor rq.out_xor), with rq from qu8_requant (qu8_wxgemm.h)
//
// sums[i] must be integers with |sums[i]| < 2^24 (the conversion to int32 is then exact).
// Kernels: scalar (the oracle), AVX2, AVX-512 (16 per step, masked tails); no allocation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu_features.h"
#include "kernels/qu8-gemm/qu8_gemm.h"

namespace nfuse::kernels {

using Qu8UnpackFn = void (*)(const uint8_t* x, size_t n, uint8_t flip, int32_t zp, float* out);
using Qu8RequantFn = void (*)(const float* sums, size_t n, int32_t bias, float multiplier, const Qu8GemmRequant& rq,
                              uint8_t* y);

void qu8_unpack_f32__scalar(const uint8_t* x, size_t n, uint8_t flip, int32_t zp, float* out);
void qu8_requant_f32__scalar(const float* sums, size_t n, int32_t bias, float multiplier, const Qu8GemmRequant& rq,
                             uint8_t* y);
#if defined(__x86_64__)
void qu8_unpack_f32__avx2(const uint8_t* x, size_t n, uint8_t flip, int32_t zp, float* out);
void qu8_requant_f32__avx2(const float* sums, size_t n, int32_t bias, float multiplier, const Qu8GemmRequant& rq,
                           uint8_t* y);
void qu8_unpack_f32__avx512(const uint8_t* x, size_t n, uint8_t flip, int32_t zp, float* out);
void qu8_requant_f32__avx512(const float* sums, size_t n, int32_t bias, float multiplier, const Qu8GemmRequant& rq,
                             uint8_t* y);
#endif

struct Qu8VcvtKernels {
  Qu8UnpackFn unpack;
  Qu8RequantFn requant;
};

// The kernels for `isa` (scalar where it has none). Never null.
Qu8VcvtKernels qu8_vcvt_select(Isa isa);

}  // namespace nfuse::kernels
