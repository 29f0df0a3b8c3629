// The pieces of nfuse.QLinearConv16 (W8A16, cpu_qlinear_conv16.cpp) that work on any range of
// output rows, shared with the fusion backend's int16 strips: the weights packed for the qs16
// GEMM, the NHWC copy and im2col rows that feed it, and the direct depthwise loop. Bit-exact
// with the ref kernel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/cpu/cpu_conv_util.h"
#include "backends/cpu/cpu_qlinear16_util.h"
#include "kernels/qs16-gemm/qs16_gemm.h"

namespace nfuse::backends::cpu {

// Weights [Co][K] per group as the qs16 GEMM's packed B (K x Co/group, K in (ky, kx, c) order),
// with bias, the x_zp correction and the multipliers; `panel_bytes` per group. Through `packs`
// when given (`weight`: the weights' value; the key names everything baked in). False when
// memory runs out.
bool pack_qs16_conv_weights(const kernels::Qs16GemmConfig& cfg, const W8A16Params& p, const int32_t* bias, size_t group,
                            PackStore* packs, const ir::Value* weight, PackedFloats* packed, size_t* panel_bytes);

// Spatial positions [s0, s1) of channels [0, cin_g) of x, counted from the first pixel of input
// row `row0` (a channel's rows are contiguous), into NHWC: dst[s * cin_g + c].
void nhwc16(const PlaneRowsOf<const uint16_t>& x, size_t cin_g, size_t row0, size_t s0, size_t s1, uint16_t* dst);

// The im2col rows of output pixels [p0, p1) of one group: dst[(q - p0) * K + (ky * kw + kx) * cin_g + c]
// (the packed weights' K order), from NHWC input rows that start at input row `row0` (those the
// pixels read); taps in the padding get x_zp's bits, which contribute zero.
void im2col16(const Conv2dGeometry& g, const uint16_t* nhwc, size_t row0, uint16_t x_zp_bits, size_t p0, size_t p1,
              uint16_t* dst);

// Output rows [y0, y1) of depthwise output channel m (input channel c = m / multiplier): int32
// accumulation where the bias and weights prove it cannot overflow (int64 otherwise), then
// ref's requantize. x: the input channel's rows, y: the output channel's.
void qlinear_dwconv16_rows(const Conv2dGeometry& g, const W8A16Params& p, const int64_t* bias, size_t m,
                           const PlaneRowsOf<const uint16_t>& x, const PlaneRowsOf<uint16_t>& y, size_t y0, size_t y1);

}  // namespace nfuse::backends::cpu
