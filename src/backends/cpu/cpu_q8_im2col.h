// The X * W orientation's A matrix for 8-bit convolutions (cpu_qlinear_conv.cpp,
// cpu_dynamic_quant_conv.cpp): one group's NCHW planes transposed to NHWC, then a row-major
// [pixels x K] im2col matrix with K in (ky, kx, c) order, built from one C/group-byte copy per
// tap (a per-pixel gather straight from NCHW cost twice the GEMM itself). Padding taps hold a
// caller-chosen byte: the zero point, which contributes nothing once it is subtracted.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/cpu_conv_util.h"

namespace nfuse::backends::cpu {

// A 1x1, stride-1, unpadded convolution: A is the NCHW input itself (row stride 1, column
// stride H*W), no im2col.
bool is_pointwise_unpadded(const Conv2dGeometry& g);

// Spatial positions [s0, s1) of one group's cin_g planes (x, H*W apart) into nhwc ([H*W x cin_g]).
void q8_to_nhwc(const uint8_t* x, size_t hw, size_t cin_g, size_t s0, size_t s1, uint8_t* nhwc);

// Rows [p0, p1) of one group's [P x K] im2col matrix (K = kh * kw * cin_g) from its nhwc planes;
// taps in the padding get `pad`.
void q8_im2col(const Conv2dGeometry& g, const uint8_t* nhwc, uint8_t pad, size_t p0, size_t p1, uint8_t* cols);

// The ONNX (c, ky, kx) order of each of `rows` weight rows of cin_g * taps bytes, reordered to
// (ky, kx, c), the order of the im2col rows (for 1x1 the same).
void q8_weights_to_tap_major(const int8_t* w, size_t rows, size_t cin_g, size_t taps, int8_t* out);

}  // namespace nfuse::backends::cpu
