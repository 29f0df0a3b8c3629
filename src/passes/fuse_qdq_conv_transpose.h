// fuse_qdq_conv_transpose: runs a QDQ-quantized upsampling ConvTranspose (kernel == stride, the
// 2x2 stride-2 heads of segmentation and text detectors) on the integer kernels:
//
//   DequantizeLinear(x_q u8|s8) -> ConvTranspose(x, DequantizeLinear(w_q s8 [Ci, Co, k, k],
//   per tensor | per axis 1, w_zp = 0), bias?) [-> Relu | Clip implied by the output range]
//   -> QuantizeLinear(y_scale, y_zp)
//   -> QLinearConv 1x1(x_q, ..., w' [Co * k * k, Ci, 1, 1], ..., B') -> DepthToSpace(k, CRD) -> y_q
//
// With taps that do not overlap, output (co, iy * k + ky, ix * k + kx) is one input pixel's dot
// product with the weights of (co, ky, kx): a pointwise convolution with one output channel per
// (co, ky, kx) (w'[(co * k + ky) * k + kx][ci] = w[ci][co][ky][kx], scales and bias repeated per
// tap), whose channels DepthToSpace in CRD order moves to their pixels; a move of bytes, exact.
// Both are standard ONNX. Numerics as fuse_qdq_conv's: exact int32 accumulation and one
// requantization instead of the f32 sum; the bias quantized as there. Only group 1, square
// kernel == stride, no pads, output_padding or dilation, and a Relu / Clip the output
// quantization implies.
//
// W8A16: the same chain with 16-bit x_q and y_q (Q/DQ of the default domain or "com.microsoft")
// becomes nfuse.QLinearConv16 and the DepthToSpace of the 16-bit codes, a Relu / Clip the
// symmetric range does not imply as the op's y_min / y_max (as fuse_qdq_conv does).
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status fuse_qdq_conv_transpose(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
