// W8A16 depthwise convolution, one output row of one channel: the loop under nfuse.QLinearConv16
// with one input channel per group (cpu_qlinear_conv16.cpp, the fusion backend's int16 strips).
//
//   acc[ox] = bias + sum over taps (ky, kx) inside the input of (x[iy][ix] - x_zp) * w[ky][kx]
//   y[ox]   = clamp(requantize(acc[ox], mult, y_zp), qmin, qmax)   (quant_arithmetic.h: round half
//             even, saturate; [qmin, qmax] inside y's type: a fused Relu / Clip)
//
// x and y are 16-bit (u16 or s16 bit patterns), w s8. The accumulator is int32 when `acc32`
// (the caller proved |bias| + sum |w| * max |x - x_zp| < 2^31), int64 otherwise. Bit-exact with
// the ref kernel on every ISA: integer sums, then the same f32 multiply and rounding.
// Preconditions: mult finite and > 0 (the op's), wo <= (w + pads) / sw + 1 as a conv's geometry.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu_features.h"

namespace nfuse::kernels {

struct Qs16DwRow {
  size_t w = 0, wo = 0, kh = 1, kw = 1, sw = 1, dw = 1, pad_left = 0;
  // rows[ky]: the input row tap row ky reads, nullptr when it lies in the padding.
  const uint16_t* const* rows = nullptr;
  const int8_t* weights = nullptr;  // kh * kw
  int64_t bias = 0;
  bool x_unsigned = false, y_unsigned = false, acc32 = false;
  int32_t x_zp = 0, y_zp = 0;
  int32_t qmin = -32768, qmax = 32767;  // in y's type (u16: 0..65535)
  float mult = 1.0f;
};

using Qs16DwRowFn = void (*)(const Qs16DwRow& r, uint16_t* y);

void qs16_dwconv_row__scalar(const Qs16DwRow& r, uint16_t* y);
#if defined(__x86_64__)
void qs16_dwconv_row__avx2(const Qs16DwRow& r, uint16_t* y);
void qs16_dwconv_row__avx512(const Qs16DwRow& r, uint16_t* y);
#endif

// The variant for `isa` (scalar where none is compiled in).
Qs16DwRowFn qs16_dwconv_row_select(Isa isa);

}  // namespace nfuse::kernels
