// Quantized 8-bit depthwise 3x3 convolution of one channel plane, direct on the bytes: the
// QLinearConv depthwise path of the cpu backend (backends/cpu/cpu_qlinear_dwconv.cpp) where the
// CPU has AVX-512 VNNI + VBMI, instead of converting the plane to f32 for the f32 kernels.
//
//   acc[y][x] = bias' + sum_{ky,kx} W[ky][kx] * in[y*sh + ky][x*sw + kx]        (exact, int32)
//   out[y][x] = the qu8 GEMM's requantization of acc (qu8_gemm.h, "Exactness"; rq from
//               qu8_requant): f32 multiply, clamp to [rq.lo, rq.hi], round half to even,
//               + rq.zero_point, xor rq.out_xor; with rq.f32_out, f32(acc) * multiplier as f32
//               (out is then float*, out_stride in floats): a float epilogue's input
//
// `in` is a padded u8 plane (s8 input with its sign bit flipped, zero point + 128): the caller
// writes the convolution's padding as the input zero point itself and folds the zero point into
// the bias (bias' = bias - x_zp * sum(W)), so every tap is a plain u8 x s8 product and the sum is
// ref's sum over (x - x_zp) * w to the bit.
//
// Microkernels (hot code: no allocation, no checks):
//   qu8_dwconv3x3__scalar           the statement of the arithmetic (tests' oracle)
//   qu8_dwconv3x3__avx512vbmi       16 outputs per step: per kx, two ymm loads from each of the
//                                   3 input rows -> one vpermt2b builds the 16 groups
//                                   (row0, row1, row2, row0) of bytes at x*sw + kx, and one
//                                   vpdpbusd multiplies them by (W[0][kx], W[1][kx], W[2][kx], 0);
//                                   requantized in-register, stored with vpmovdb under a mask.
// Strides 1 and 2 (sh, sw), dilation 1.
//
// Reads: rows y*sh .. y*sh + 2 for y in [y0, y1), and in every row bytes up to
// (round_up(out_width, 16) - 16) * sw + 2 + 31 (qu8_dwconv_row_bytes gives the row length the
// caller must provide).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu_features.h"
#include "kernels/qu8-gemm/qu8_gemm.h"

namespace nfuse::kernels {

struct Qu8DwconvParams {
  const uint8_t* in = nullptr;  // padded plane, row r at in + r * in_stride
  size_t in_stride = 0;
  int32_t w[3] = {};            // per kx: bytes (W[0][kx], W[1][kx], W[2][kx], 0) as s8, little-endian
  int32_t bias = 0;             // bias - x_zp * sum(W)
  float multiplier = 1.0f;
  Qu8GemmRequant rq;
  uint8_t* out = nullptr;  // row y at out + y * out_stride
  size_t out_stride = 0;
  size_t out_width = 0;
  size_t sh = 1, sw = 1;
};

using Qu8DwconvFn = void (*)(const Qu8DwconvParams& p, size_t y0, size_t y1);

void qu8_dwconv3x3__scalar(const Qu8DwconvParams& p, size_t y0, size_t y1);
#if defined(__x86_64__)
void qu8_dwconv3x3__avx512vbmi(const Qu8DwconvParams& p, size_t y0, size_t y1);
#endif

// Packs column kx of a row-major 3x3 s8 kernel into the Qu8DwconvParams::w form.
int32_t qu8_dwconv_pack_column(const int8_t* w3x3, size_t kx);

// Bytes a padded row must hold for `out_width` outputs at stride `sw` (the kernels' reads).
size_t qu8_dwconv_row_bytes(size_t out_width, size_t sw);

// The SIMD kernel for `isa`, or nullptr where there is none (callers keep their other path).
Qu8DwconvFn qu8_dwconv3x3_select(Isa isa);

}  // namespace nfuse::kernels
